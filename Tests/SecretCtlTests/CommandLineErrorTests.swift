import Keychain
import KeychainCore
import Testing

@testable import SecretCtl

@Suite struct CommandLineErrorTests {
    @Test("a silent exit has its status and prints nothing")
    func silent() {
        let quiet = CommandLineError.silent(status: .notFound)
        #expect(quiet.status == .notFound)
        #expect(quiet.message == nil)
        #expect(CommandLineError.silent(status: ExitStatus(rawValue: 77)).status.rawValue == 77)  // login's COMMAND
        // A failure always says something, even with an empty message: only .silent is quiet.
        #expect(CommandLineError.failure("", status: .notFound).message == "secretctl: ")
    }

    @Test("a provider or data failure exits 6 (failed), never 1, which means only that nothing matched")
    func failedIsNotNotFound() {
        let backend = CommandLineError(.backend(domain: "g-dbus-error-quark", code: 16, message: "Failed"))
        #expect(backend.status == .failed)
        #expect(backend.status != .notFound)
        #expect(backend.status.rawValue == 6)
        #expect(backend.message == "secretctl: g-dbus-error-quark error 16: Failed")
        // org.freedesktop.DBus.Error.Failed (GDBus's code 0): the provider's message alone.
        let failed = CommandLineError(.backend(domain: "g-dbus-error-quark", code: 0, message: "no TPM answers at device:/dev/tpmrm0"))
        #expect(failed.message == "secretctl: no TPM answers at device:/dev/tpmrm0")
        // LimitsExceeded (8), a quota of secretd's: its message alone too, and exit 6.
        let quota = CommandLineError(.backend(domain: "g-dbus-error-quark", code: 8, message: "the write would go over secretd.conf's quota-items = 2"))
        #expect(quota.message == "secretctl: the write would go over secretd.conf's quota-items = 2" && quota.status == .failed)
        // The library's own failures: a provider that cannot do the call fails; a missing keyring is
        // "nothing matched".
        #expect(CommandLineError(.notSupported(feature: "access groups")).status == .failed)
        #expect(CommandLineError(.protocolError(reason: "no reply to GetAll")).status == .failed)
        let missing = CommandLineError(.noSuchKeyring(alias: "x"))
        #expect(missing.status == .notFound)
        #expect(missing.message == "secretctl: no keyring has the alias 'x'")
        #expect(CommandLineError(.unexpectedData(reason: "the stored value is not UTF-8 text")).status == .failed)
    }

    @Test("a usage error points to the verb's help, a failure is one line")
    func messages() {
        #expect(CommandLineError.usage("missing ACCOUNT", command: "get").message
            == "secretctl: missing ACCOUNT\nSee 'secretctl get --help'.")
        #expect(CommandLineError.usage("unknown command 'x'", command: nil).message
            == "secretctl: unknown command 'x'\nSee 'secretctl --help'.")
        #expect(CommandLineError.failure("nothing matches", status: .notFound).message == "secretctl: nothing matches")
    }
}
