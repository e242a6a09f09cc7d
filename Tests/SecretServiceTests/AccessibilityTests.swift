import KeychainCore
import Foundation
import KeychainTestSupport
@testable import SecretService
import Testing

/// Accessibility classes against secretd with real clients: after-first-unlock items stay
/// readable through an ordinary lock (secretctl, secret-tool), others do not; `lock --all` and
/// a restart lock them too; an access group gives its items a class; device-only items stay
/// out of an export unless asked.
@Suite struct AccessibilityTests {
    static let login = "/org/freedesktop/secrets/collection/login"

    /// The item paths SearchItems reports as unlocked and as locked for `attributes` (GVariant text).
    static func search(_ fixture: SecretdFixture, _ attributes: String) throws -> (unlocked: Int, locked: Int) {
        let reply = try fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems", "(\(attributes),)")
        // ([objectpath '/…/1'], [objectpath '/…/2'],) or ([], @ao [],)
        let lists = reply.components(separatedBy: "], ")
        func count(_ text: String) -> Int { text.components(separatedBy: "/collection/").count - 1 }
        return (count(lists.first ?? ""), count(lists.dropFirst().joined()))
    }

    static func isLocked(_ fixture: SecretdFixture) throws -> Bool {
        try fixture.call(login, "org.freedesktop.DBus.Properties", "Get", "('org.freedesktop.Secret.Collection', 'Locked')") == "(<true>,)"
    }

    @Test("after-first-unlock items are read and rewritten through an ordinary lock without a prompt; others stay locked; lock --all and a restart lock them too")
    func afterFirstUnlock() throws {
        let fixture = try SecretdFixture()
        let pinentry = try ScriptedPinentry(in: fixture.root, answers: Array(repeating: "CANCEL", count: 20))  // dismisses every prompt
        fixture.environment.merge(pinentry.environment) { $1 }
        try fixture.writeConfiguration("pinentry = \(pinentry.program.path)\n")
        var daemon = try fixture.start()
        defer { daemon.stop() }
        func secretctl(_ arguments: [String], input: String? = nil) throws -> CommandResult {
            try fixture.run([SecretdFixture.secretctlPath] + arguments, input: input)
        }
        let stored = try secretctl(["set", "--accessible", "after-first-unlock", "com.example.sync", "token"], input: "sync-secret")
        #expect(stored.status == 0, "\(stored.errorOutput)")
        #expect(try secretctl(["set", "com.example.bank", "me"], input: "bank-secret").status == 0)
        // Another client names the class as a plain attribute.
        #expect(try fixture.run(["secret-tool", "store", "--label=Backup", "service", "backup", "keychain:accessible", "after-first-unlock"],
                                input: "backup-secret").status == 0)
        let shown = try secretctl(["show", "com.example.sync", "token"])
        #expect(shown.text.contains("accessible: after-first-unlock"), "\(shown.text)")
        #expect(try secretctl(["show", "com.example.bank", "me"]).text.contains("accessible: when-unlocked"))

        // An ordinary lock: the keyring is locked, the after-first-unlock items are not.
        #expect(try secretctl(["lock"]).status == 0)
        #expect(try Self.isLocked(fixture))
        #expect(try secretctl(["get", "com.example.sync", "token"]).text == "sync-secret")
        let lookup = try fixture.run(["secret-tool", "lookup", "service", "backup"])
        #expect(lookup.text == "backup-secret", "\(lookup.errorOutput)")
        #expect(try Self.search(fixture, "{'service': 'com.example.sync'}") == (1, 0))
        #expect(try Self.search(fixture, "{'service': 'com.example.bank'}") == (0, 1))
        #expect(pinentry.count("GETPIN") == 0, "\(pinentry.log)")
        let bank = try secretctl(["get", "com.example.bank", "me"])
        #expect(bank.status != 0 && !bank.text.contains("bank-secret"), "\(bank.text)")
        #expect(pinentry.count("GETPIN") > 0, "the when-unlocked item asks: \(pinentry.log)")

        // Rewritten and created in its class while locked; a new item of another class is refused.
        #expect(try secretctl(["set", "com.example.sync", "token"], input: "sync-2").status == 0)
        #expect(try secretctl(["set", "--accessible", "after-first-unlock", "com.example.sync", "second"], input: "sync-3").status == 0)
        #expect(try secretctl(["get", "com.example.sync", "token"]).text == "sync-2")
        #expect(try secretctl(["get", "com.example.sync", "second"]).text == "sync-3")
        #expect(try Self.isLocked(fixture))

        // lock --all: the after-first-unlock items lock too, until the password opens the keyring.
        #expect(try secretctl(["lock", "--all"]).status == 0)
        #expect(try Self.search(fixture, "{'service': 'com.example.sync'}") == (0, 2))
        let refused = try secretctl(["get", "com.example.sync", "token"])
        #expect(refused.status != 0 && !refused.text.contains("sync"), "\(refused.text)")
        let unlocked = try secretctl(["unlock", "--password-stdin"], input: "login-password")
        #expect(unlocked.status == 0, "\(unlocked.errorOutput) \(daemon.log)")
        #expect(try secretctl(["get", "com.example.bank", "me"]).text == "bank-secret")
        #expect(try Self.search(fixture, "{'service': 'com.example.sync'}") == (2, 0))

        // A restart: nothing opens until the keyring has been unlocked again.
        daemon.stop()
        daemon = try fixture.start([], input: nil)
        #expect(try Self.search(fixture, "{'service': 'com.example.sync'}") == (0, 2))
        #expect(try secretctl(["unlock", "--password-stdin"], input: "login-password").status == 0)
        #expect(try secretctl(["lock"]).status == 0)
        #expect(try secretctl(["get", "com.example.sync", "token"]).text == "sync-2")
        #expect(!daemon.log.contains("sync-2") && !daemon.log.contains("bank-secret"))
    }

    @Test("a class secretd does not know is refused; changing an item's attributes keeps its class unless they name one")
    func badClassAndAttributeChanges() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        func secretctl(_ arguments: [String], input: String? = nil) throws -> CommandResult {
            try fixture.run([SecretdFixture.secretctlPath] + arguments, input: input)
        }
        let usage = try secretctl(["set", "--accessible", "sometimes", "svc", "acct"], input: "x")
        #expect(usage.status == 2 && usage.errorOutput.contains("after-first-unlock"), "\(usage.errorOutput)")
        let unknown = try fixture.run(["secret-tool", "store", "--label=x", "service", "bad", "keychain:accessible", "sometimes"], input: "x")
        #expect(unknown.status != 0 && unknown.errorOutput.contains("keychain:accessible"), "\(unknown.errorOutput)")
        #expect(try fixture.run(["secret-tool", "search", "service", "bad"]).text.isEmpty)

        #expect(try secretctl(["set", "--accessible", "after-first-unlock", "svc", "acct"], input: "kept").status == 0)
        let found = try fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems", "({'service': 'svc'},)")
        let path = try #require(found.components(separatedBy: "'").first { $0.hasPrefix("/org/freedesktop/secrets/collection/login/") })
        // As Seahorse would: new attributes without the class; it stays.
        _ = try fixture.call(path, "org.freedesktop.DBus.Properties", "Set",
                             "('org.freedesktop.Secret.Item', 'Attributes', <{'service': 'svc', 'account': 'acct', 'note': 'edited'}>)")
        #expect(try secretctl(["lock"]).status == 0)
        #expect(try secretctl(["get", "svc", "acct"]).text == "kept")
        // Moving it out of its class needs the master key: refused while locked, allowed after unlocking.
        #expect(throws: (any Error).self) {
            try fixture.call(path, "org.freedesktop.DBus.Properties", "Set",
                             "('org.freedesktop.Secret.Item', 'Attributes', <{'service': 'svc', 'account': 'acct', 'keychain:accessible': 'when-unlocked'}>)")
        }
        #expect(try secretctl(["get", "svc", "acct"]).text == "kept")
        #expect(try secretctl(["unlock", "--password-stdin"], input: "login-password").status == 0)
        _ = try fixture.call(path, "org.freedesktop.DBus.Properties", "Set",
                             "('org.freedesktop.Secret.Item', 'Attributes', <{'service': 'svc', 'account': 'acct', 'keychain:accessible': 'when-unlocked'}>)")
        #expect(try secretctl(["lock"]).status == 0)
        #expect(try Self.search(fixture, "{'service': 'svc'}") == (0, 1))
    }

    @Test("an access group's class applies to its items that name none; device-only items stay out of an export unless asked")
    func groupDefaultAndDeviceOnly() throws {
        let setup = try AccessGroupTests.Setup(tools: ["backup"])
        try setup.writePolicy("[group \"com.example.backup\"]\nmember = \(setup.identity("backup"))\naccessible = after-first-unlock\n")
        let fixture = setup.fixture
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try setup.run("backup", ["set", "--group", "com.example.backup", "nightly", "s3"], input: "bucket-key").status == 0)
        #expect(try setup.run("backup", ["show", "--group", "com.example.backup", "nightly", "s3"]).text.contains("accessible: after-first-unlock"))
        #expect(try setup.run("backup", ["lock"]).status == 0)
        #expect(try setup.run("backup", ["get", "--group", "com.example.backup", "nightly", "s3"]).text == "bucket-key")
        #expect(try setup.run("backup", ["unlock", "--password-stdin"], input: "login-password").status == 0)

        // Device-only: left out of an export, with a note, unless --include-device-only.
        #expect(try setup.run("backup", ["set", "--accessible", "when-unlocked-device-only", "vpn", "laptop"], input: "vpn-key").status == 0)
        #expect(try setup.run("backup", ["set", "mail", "alice"], input: "mail-pass").status == 0)
        let file = fixture.root.appendingPathComponent("out.export").path
        let exported = try setup.run("backup", ["export", file], input: "correct horse battery\n")
        #expect(exported.status == 0, "\(exported.errorOutput)")
        #expect(exported.text.contains("exported 2 items") && exported.text.contains("left out 1 device-only item"), "\(exported.text)")
        let all = try setup.run("backup", ["export", "--force", "--include-device-only", file], input: "correct horse battery\n")
        #expect(all.text.contains("exported 3 items") && !all.text.contains("left out"), "\(all.text)")
    }

    @Test("the policy parser takes accessible = CLASS in a group, and names the classes for a wrong one")
    func parser() throws {
        let policy = try AccessPolicy.parse("[group \"a.b\"]\naccessible = after-first-unlock-device-only\n", file: "f")
        #expect(policy.group("a.b")?.accessibility == .afterFirstUnlockDeviceOnly)
        #expect(policy.group("a.b")?.accessibility.survivesLock == true)
        #expect(throws: ConfigurationError.self) { try AccessPolicy.parse("[group \"a.b\"]\naccessible = often\n", file: "f") }
        do {
            _ = try AccessPolicy.parse("[group \"a.b\"]\naccessible = often\n", file: "f")
        } catch {
            #expect("\(error)".contains("when-unlocked, after-first-unlock"), "\(error)")
        }
    }
}
