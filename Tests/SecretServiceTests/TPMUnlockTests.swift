import Foundation
import Glibc
import KeychainTestSupport
import Testing

/// The login keyring's TPM slot against a real software TPM (swtpm): `secretctl tpm enroll`
/// needs the login password; then secretd unlocks the keyring when it starts, with no password;
/// a changed PCR, another machine's TPM, a damaged slot file or no TPM leave it locked with a
/// clear message, and the password still opens it; `secretctl tpm remove` ends it.
@Suite struct TPMUnlockTests {
    static let password = "login-password"
    static let login = "/org/freedesktop/secrets/collection/login"

    static func isLocked(_ fixture: SecretdFixture) throws -> Bool {
        try fixture.call(login, "org.freedesktop.DBus.Properties", "Get", "('org.freedesktop.Secret.Collection', 'Locked')") == "(<true>,)"
    }

    static func secretctl(_ fixture: SecretdFixture, _ arguments: [String], input: String? = nil) throws -> CommandResult {
        try fixture.run([SecretdFixture.secretctlPath] + arguments, input: input)
    }

    /// A secretd fixture whose secretd.conf names `tpm`.
    static func fixture(using tpm: SoftwareTPM) throws -> SecretdFixture {
        let fixture = try SecretdFixture()
        try fixture.writeConfiguration("tpm-tcti = \(tpm.tcti)\n")
        return fixture
    }

    /// Restarts secretd with no password at all: only the TPM slot can unlock the keyring.
    static func restart(_ daemon: inout SupervisedProcess, _ fixture: SecretdFixture) throws {
        daemon.stop()
        daemon = try fixture.start([], input: nil)
    }

    @Test("enroll needs the password; then each start unlocks the keyring from the TPM alone; remove ends it")
    func enrollAndStart() throws {
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        let fixture = try Self.fixture(using: tpm)
        var daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try Self.secretctl(fixture, ["tpm", "status"]).text == "no TPM slot (TCTI \(tpm.tcti))\n")
        #expect(try Self.secretctl(fixture, ["set", "com.example.db", "app"], input: "db-secret").status == 0)

        // A wrong password enrolls nothing.
        let wrong = try Self.secretctl(fixture, ["tpm", "enroll"], input: "not-the-password\n")
        #expect(wrong.status == 4, "\(wrong.errorOutput)")
        let slotFile = fixture.dataDirectory.appendingPathComponent("login-keyring.tpm")
        #expect(!FileManager.default.fileExists(atPath: slotFile.path))
        try fixture.passwordClock.advance(by: 1.01)
        let enrolled = try Self.secretctl(fixture, ["tpm", "enroll"], input: Self.password + "\n")
        #expect(enrolled.status == 0, "\(enrolled.errorOutput) \(daemon.log)")
        #expect(enrolled.errorOutput.contains("sealed to this machine's TPM"))
        let mode = try FileManager.default.attributesOfItem(atPath: slotFile.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let json = try Self.secretctl(fixture, ["tpm", "status", "--json"]).text
        #expect(json == "{\"enrolled\":true,\"last_failure\":null,\"pcrs\":[],\"tcti\":\"\(tpm.tcti)\"}\n", "\(json)")
        // Neither the master key nor the password is in the file.
        let fileBytes = try Data(contentsOf: slotFile)
        #expect(fileBytes.range(of: Data(Self.password.utf8)) == nil)

        // Restarts with no password: unlocked by the TPM, twice.
        for _ in 0..<2 {
            try Self.restart(&daemon, fixture)
            #expect(try !Self.isLocked(fixture), "\(daemon.log)")
            #expect(try Self.secretctl(fixture, ["get", "com.example.db", "app"]).text == "db-secret")
            #expect(daemon.log.contains("unlocked the login keyring with the TPM (bound to no PCR)"))
        }
        #expect(try tpm.loadedHandles().isEmpty)

        // Removed: the next start leaves the keyring locked; the password opens it.
        #expect(try Self.secretctl(fixture, ["tpm", "remove"]).errorOutput.contains("TPM slot removed"))
        #expect(!FileManager.default.fileExists(atPath: slotFile.path))
        #expect(try Self.secretctl(fixture, ["tpm", "remove"]).errorOutput.contains("no TPM slot"))
        try Self.restart(&daemon, fixture)
        #expect(try Self.isLocked(fixture))
        #expect(try Self.secretctl(fixture, ["unlock", "--password-stdin"], input: Self.password).status == 0)
        #expect(!daemon.log.contains("db-secret") && !daemon.log.contains(Self.password))
    }

    @Test("a changed PCR, another TPM, a damaged slot file or no TPM leave the keyring locked with a clear message; the password still works")
    func failures() throws {
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        let fixture = try Self.fixture(using: tpm)
        var daemon = try fixture.start()
        defer { daemon.stop() }
        let badList = try Self.secretctl(fixture, ["tpm", "enroll", "--pcrs", "7,24"], input: Self.password + "\n")
        #expect(badList.status == 2 && badList.errorOutput.contains("0 to 23"), "\(badList.errorOutput)")
        let enrolled = try Self.secretctl(fixture, ["tpm", "enroll", "--pcrs", "16,7"], input: Self.password + "\n")
        #expect(enrolled.status == 0, "\(enrolled.errorOutput)")
        #expect(try Self.secretctl(fixture, ["tpm", "status"]).text == "TPM slot enrolled, bound to PCR 7, 16 (TCTI \(tpm.tcti))\n")
        try Self.restart(&daemon, fixture)
        #expect(try !Self.isLocked(fixture), "\(daemon.log)")

        // PCR 16 moves on: the slot no longer opens; the keyring stays locked and says why.
        try tpm.extendPCR(16)
        try Self.restart(&daemon, fixture)
        #expect(try Self.isLocked(fixture))
        #expect(daemon.log.contains("a PCR the slot is bound to changed"), "\(daemon.log)")
        let status = try Self.secretctl(fixture, ["tpm", "status"]).text
        #expect(status.contains("at start: a PCR the slot is bound to changed") && status.contains("secretctl tpm enroll"), "\(status)")
        #expect(try Self.secretctl(fixture, ["unlock", "--password-stdin"], input: Self.password).status == 0)
        // Enrolled again at the new value, it opens again.
        #expect(try Self.secretctl(fixture, ["tpm", "enroll", "--pcrs", "7,16"], input: Self.password + "\n").status == 0)
        try Self.restart(&daemon, fixture)
        #expect(try !Self.isLocked(fixture), "\(daemon.log)")

        // Another machine: the same files, another TPM.
        let other = try SoftwareTPM()
        defer { other.stop() }
        try fixture.writeConfiguration("tpm-tcti = \(other.tcti)\n")
        try Self.restart(&daemon, fixture)
        #expect(try Self.isLocked(fixture))
        #expect(daemon.log.contains("sealed by another TPM"), "\(daemon.log)")
        #expect(try Self.secretctl(fixture, ["unlock", "--password-stdin"], input: Self.password).status == 0)

        // No TPM at all: a clear message at start, and from enroll.
        try fixture.writeConfiguration("tpm-tcti = swtpm:host=127.0.0.1,port=\(try SoftwareTPM.freePortPair())\n")
        try Self.restart(&daemon, fixture)
        #expect(try Self.isLocked(fixture))
        #expect(daemon.log.contains("no TPM answers at"), "\(daemon.log)")
        #expect(try Self.secretctl(fixture, ["unlock", "--password-stdin"], input: Self.password).status == 0)
        let noTPM = try Self.secretctl(fixture, ["tpm", "enroll"], input: Self.password + "\n")
        #expect(noTPM.status != 0 && noTPM.errorOutput.contains("no TPM answers at") && noTPM.errorOutput.contains("tpm-tcti"),
                "\(noTPM.errorOutput)")

        // A damaged slot file: refused, named, nothing else changes.
        try fixture.writeConfiguration("tpm-tcti = \(tpm.tcti)\n")
        let slotFile = fixture.dataDirectory.appendingPathComponent("login-keyring.tpm")
        var bytes = try Data(contentsOf: slotFile)
        bytes[bytes.count - 3] ^= 0x40
        try bytes.write(to: slotFile)
        try Self.restart(&daemon, fixture)
        #expect(try Self.isLocked(fixture))
        #expect(daemon.log.contains("the TPM did not unlock the login keyring"), "\(daemon.log)")
        try Data("not a slot".utf8).write(to: slotFile)
        try Self.restart(&daemon, fixture)
        #expect(try Self.isLocked(fixture))
        #expect(daemon.log.contains("login-keyring.tpm is not a TPM slot"), "\(daemon.log)")
        #expect(try Self.secretctl(fixture, ["unlock", "--password-stdin"], input: Self.password).status == 0)
        #expect(try tpm.loadedHandles().isEmpty)
    }

    @Test("after a restore from another login keyring, the slot's master key no longer opens it: the start stays locked and says why; the password opens it")
    func afterRestore() throws {
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        // Another login keyring (same password, its own master key) and a backup of it.
        let other = try SecretdFixture()
        let otherDaemon = try other.start()
        #expect(try Self.secretctl(other, ["set", "com.example.other", "app"], input: "from-the-backup").status == 0)
        let backup = other.root.appendingPathComponent("other.sqlite3").path
        #expect(try Self.secretctl(other, ["backup", backup]).status == 0)
        otherDaemon.stop()

        let fixture = try Self.fixture(using: tpm)
        var daemon = try fixture.start()
        defer { daemon.stop() }
        let enrolled = try Self.secretctl(fixture, ["tpm", "enroll"], input: Self.password + "\n")
        #expect(enrolled.status == 0, "\(enrolled.errorOutput)")
        let restored = try Self.secretctl(fixture, ["restore", backup])
        #expect(restored.status == 0, "\(restored.errorOutput)")
        let slotFile = fixture.dataDirectory.appendingPathComponent("login-keyring.tpm")
        let slot = try Data(contentsOf: slotFile)

        // The slot unseals the old master key, which does not open the restored keyring.
        try Self.restart(&daemon, fixture)
        #expect(try Self.isLocked(fixture), "\(daemon.log)")
        #expect(daemon.log.contains("the TPM did not unlock the login keyring: login-keyring.tpm is not a TPM slot of this keyring: the master key does not open"), "\(daemon.log)")
        let status = try Self.secretctl(fixture, ["tpm", "status"]).text
        #expect(status.contains("at start: login-keyring.tpm is not a TPM slot of this keyring: the master key does not open"), "\(status)")
        #expect(status.contains("unlock with the password, then enroll again (secretctl tpm enroll)"), "\(status)")
        #expect(daemon.isRunning, "\(daemon.log)")
        #expect(try Data(contentsOf: slotFile) == slot, "the slot file changed")
        #expect(try Self.secretctl(fixture, ["unlock", "--password-stdin"], input: Self.password).status == 0)
        #expect(try Self.secretctl(fixture, ["get", "com.example.other", "app"]).text == "from-the-backup")
        #expect(try tpm.loadedHandles().isEmpty)

        // What the advice says: enroll again, and the next start is unlocked by the TPM.
        let again = try Self.secretctl(fixture, ["tpm", "enroll"], input: Self.password + "\n")
        #expect(again.status == 0, "\(again.errorOutput)")
        try Self.restart(&daemon, fixture)
        #expect(try !Self.isLocked(fixture), "\(daemon.log)")
        #expect(try Self.secretctl(fixture, ["get", "com.example.other", "app"]).text == "from-the-backup")
        #expect(!daemon.log.contains("from-the-backup") && !daemon.log.contains(Self.password))
    }

    @Test("a TPM that takes the connection and never answers: enroll fails after the timeout, the start goes on locked; secretd keeps serving")
    func silentTPM() throws {
        let tpm = try SoftwareTPM()
        defer { tpm.stop() }
        let (listeners, port) = try SoftwareTPM.unansweredPortPair()
        defer { listeners.forEach { close($0) } }
        let fixture = try Self.fixture(using: tpm)
        fixture.environment["SECRETD_TEST_TPM_TIMEOUT"] = "2"
        var daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try Self.secretctl(fixture, ["tpm", "enroll"], input: Self.password + "\n").status == 0)

        // The TPM hangs: the start waits 2 s for it, then serves with the keyring locked.
        try fixture.writeConfiguration("tpm-tcti = swtpm:host=127.0.0.1,port=\(port)\n")
        let started = Date()
        try Self.restart(&daemon, fixture)
        #expect(Date().timeIntervalSince(started) < 15)
        #expect(try Self.isLocked(fixture))
        #expect(daemon.log.contains("did not answer within 2 s"), "\(daemon.log)")
        #expect(try Self.secretctl(fixture, ["unlock", "--password-stdin"], input: Self.password).status == 0)

        // Enroll against it: an error after 2 s, and secretd answers other calls meanwhile.
        let asked = Date()
        let enroll = try Self.secretctl(fixture, ["tpm", "enroll"], input: Self.password + "\n")
        #expect(enroll.status != 0 && enroll.errorOutput.contains("did not answer within 2 s"), "\(enroll.errorOutput)")
        #expect(Date().timeIntervalSince(asked) < 15)
        #expect(try Self.secretctl(fixture, ["status"]).status == 0)
        // The slot from before is still there (a failed enrolment replaces nothing).
        #expect(FileManager.default.fileExists(atPath: fixture.dataDirectory.appendingPathComponent("login-keyring.tpm").path))
    }
}
