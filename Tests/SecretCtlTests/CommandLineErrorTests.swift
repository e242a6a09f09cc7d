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

    @Test("a usage error points to the verb's help, a failure is one line")
    func messages() {
        #expect(CommandLineError.usage("missing ACCOUNT", command: "get").message
            == "secretctl: missing ACCOUNT\nSee 'secretctl get --help'.")
        #expect(CommandLineError.usage("unknown command 'x'", command: nil).message
            == "secretctl: unknown command 'x'\nSee 'secretctl --help'.")
        #expect(CommandLineError.failure("nothing matches", status: .notFound).message == "secretctl: nothing matches")
    }
}
