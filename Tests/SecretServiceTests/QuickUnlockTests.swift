import Foundation
import KeychainTestSupport
import Testing

/// Quick unlock with a PIN: `secretctl pin` and `secretctl unlock --pin` against secretd, and
/// the PIN question of secretd's unlock prompt (answered by the scripted pinentry).
@Suite struct QuickUnlockTests {
    static let password = "login-password"

    static func secretctl(_ fixture: SecretdFixture, _ arguments: [String], input: String? = nil) throws -> CommandResult {
        try fixture.run([SecretdFixture.secretctlPath] + arguments, input: input)
    }

    static func isLocked(_ fixture: SecretdFixture) throws -> Bool {
        try fixture.call("/org/freedesktop/secrets/collection/login", "org.freedesktop.DBus.Properties", "Get",
                         "('org.freedesktop.Secret.Collection', 'Locked')") == "(<true>,)"
    }

    @Test("a PIN needs the login password to set; it unlocks after a lock; wrong PINs wait and the fifth ends it; the password still works; a restart or pin clear forgets it")
    func pinFromTheCommandLine() throws {
        let fixture = try SecretdFixture()
        var daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try Self.secretctl(fixture, ["pin", "status"]).text == "no PIN set\n")

        // A wrong password sets nothing; nor does a PIN that is too short.
        let wrong = try Self.secretctl(fixture, ["pin", "set", "--stdin"], input: "not-the-password\n4711\n")
        #expect(wrong.status == 4, "\(wrong.errorOutput)")
        #expect(try Self.secretctl(fixture, ["pin", "status"]).text == "no PIN set\n")
        try fixture.passwordClock.advance(by: 1.01)
        let short = try Self.secretctl(fixture, ["pin", "set", "--stdin"], input: "\(Self.password)\n12\n")
        #expect(short.status == 2, "\(short.errorOutput)")
        let set = try Self.secretctl(fixture, ["pin", "set", "--stdin"], input: "\(Self.password)\n4711\n")
        #expect(set.status == 0, "\(set.errorOutput)")
        #expect(try Self.secretctl(fixture, ["pin", "status", "--json"]).text == "{\"set\":true,\"tries_left\":5}\n")

        // Locked, then opened with the PIN.
        #expect(try Self.secretctl(fixture, ["lock"]).status == 0)
        #expect(try Self.isLocked(fixture))
        let unlocked = try Self.secretctl(fixture, ["unlock", "--pin"], input: "4711")
        #expect(unlocked.status == 0, "\(unlocked.errorOutput)")
        #expect(try !Self.isLocked(fixture))

        // Wrong PINs: each says how many tries are left and waits as a wrong password does.
        #expect(try Self.secretctl(fixture, ["lock"]).status == 0)
        var waited = 0.0
        for left in [4, 3, 2, 1] {
            let attempt = try Self.secretctl(fixture, ["unlock", "--pin"], input: "0000")
            #expect(attempt.status == 4 && attempt.errorOutput.contains("\(left) tr"), "\(attempt.errorOutput)")
            // Too soon: refused without counting.
            let soon = try Self.secretctl(fixture, ["unlock", "--pin"], input: "4711")
            #expect(soon.status == 4 && soon.errorOutput.contains("try again in"), "\(soon.errorOutput)")
            waited = pow(2, Double(4 - left))
            try fixture.passwordClock.advance(by: waited + 0.01)
        }
        #expect(try Self.secretctl(fixture, ["pin", "status", "--json"]).text == "{\"set\":true,\"tries_left\":1}\n")
        let last = try Self.secretctl(fixture, ["unlock", "--pin"], input: "0000")
        #expect(last.status == 4 && last.errorOutput.contains("the PIN is gone"), "\(last.errorOutput)")
        #expect(try Self.secretctl(fixture, ["pin", "status"]).text == "no PIN set\n")
        try fixture.passwordClock.advance(by: 16.01)
        let gone = try Self.secretctl(fixture, ["unlock", "--pin"], input: "4711")
        #expect(gone.status == 6 && gone.errorOutput.contains("no PIN is set"), "\(gone.errorOutput)")
        #expect(try Self.isLocked(fixture))
        let byPassword = try Self.secretctl(fixture, ["unlock", "--password-stdin"], input: Self.password)
        #expect(byPassword.status == 0, "\(byPassword.errorOutput)")
        #expect(try !Self.isLocked(fixture))

        // pin clear forgets it; so does a restart (it never reaches the disk).
        #expect(try Self.secretctl(fixture, ["pin", "set", "--stdin"], input: "\(Self.password)\n4711\n").status == 0)
        #expect(try Self.secretctl(fixture, ["pin", "clear"]).errorOutput.contains("PIN cleared"))
        #expect(try Self.secretctl(fixture, ["pin", "status"]).text == "no PIN set\n")
        #expect(try Self.secretctl(fixture, ["pin", "set", "--stdin"], input: "\(Self.password)\n4711\n").status == 0)
        daemon.stop()
        daemon = try fixture.start()
        #expect(try Self.secretctl(fixture, ["pin", "status"]).text == "no PIN set\n")
        #expect(!daemon.log.contains("4711"))
    }

    @Test("secretd's unlock prompt asks for the PIN first; an empty answer asks for the password instead")
    func pinInThePrompt() throws {
        let fixture = try SecretdFixture()
        let pinentry = try ScriptedPinentry(in: fixture.root, answers: ["9876"])
        fixture.environment.merge(pinentry.environment) { $1 }
        try fixture.writeConfiguration("pinentry = \(pinentry.program.path)\n")
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try fixture.run(["secret-tool", "store", "--label=x", "service", "s", "account", "a"], input: "kept").status == 0)
        #expect(try Self.secretctl(fixture, ["pin", "set", "--stdin"], input: "\(Self.password)\n9876\n").status == 0)

        #expect(try Self.secretctl(fixture, ["lock"]).status == 0)
        let lookup = try fixture.run(["secret-tool", "lookup", "service", "s", "account", "a"])
        #expect(lookup.text == "kept", "\(lookup.errorOutput) \(daemon.log)")
        #expect(pinentry.log.contains("PIN"), "\(pinentry.log)")
        #expect(pinentry.count("GETPIN") == 1)

        // Empty: the password instead.
        #expect(try Self.secretctl(fixture, ["lock"]).status == 0)
        try pinentry.setAnswers(["", Self.password])
        let again = try fixture.run(["secret-tool", "lookup", "service", "s", "account", "a"])
        #expect(again.text == "kept", "\(again.errorOutput) \(daemon.log)")
        #expect(pinentry.count("GETPIN") == 3)
    }
}
