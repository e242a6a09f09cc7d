import KeychainCore
import Foundation
import KeychainTestSupport
import Testing

/// Consent for new readers (`consent = new-readers`) against real secretd and real clients:
/// copies of `secret-tool` under their own paths are new readers; the person answers through a
/// scripted pinentry, or, with none, `secretctl consent allow` does it ahead.
@Suite struct ReaderConsentTests {
    typealias Setup = AccessGroupTests.Setup

    /// Replaces the program `name` of `setup` by a changed copy (one byte more: still the same
    /// program to run), as an upgrade or an attacker would: a new file moved over the old.
    static func replace(_ name: String, in setup: Setup) throws {
        let path = setup.bin.appendingPathComponent(name).path
        let bytes = try #require(FileManager.default.contents(atPath: path))
        try ExecutableFile.write(Array(bytes) + [0], to: path + ".new")
        #expect(rename(path + ".new", path) == 0)
    }

    @Test("headless: a new reader is refused at once, saying how to allow it; consent allow, list and revoke; a changed program is refused again")
    func headless() throws {
        let setup = try Setup()
        try setup.fixture.writeConfiguration("consent = new-readers\n")
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        #expect(try setup.run("alpha", ["set", "vault", "ann"], input: "consented-secret").status == 0)
        let beta = setup.identity("st-beta")

        let refused = try setup.run("st-beta", ["lookup", "service", "vault"])
        #expect(refused.status != 0 && refused.text.isEmpty)
        #expect(refused.errorOutput.contains("secretctl consent allow \(beta) default"), "\(refused.errorOutput)")
        #expect(daemon.log.contains("refused: \(beta) may not read the secrets of the access group “default”"), "\(daemon.log)")
        // Asked directly for the secret, the item is locked to it, with the same advice.
        let listed = try setup.fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems", "({'service': 'vault'},)")
        #expect(listed.contains("[objectpath"), "\(listed)")

        // Allowing needs the login password.
        let wrong = try setup.run("alpha", ["consent", "allow", "--password-stdin", beta, "default"], input: "nope")
        #expect(wrong.status == 4, "\(wrong.errorOutput)")
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).status != 0)
        try setup.fixture.passwordClock.advance(by: 1.01)
        let allowed = try setup.run("alpha", ["consent", "allow", "--password-stdin", beta, "default"], input: "login-password")
        #expect(allowed.status == 0, "\(allowed.errorOutput)")
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).text == "consented-secret")
        // Other readers are still asked.
        #expect(try setup.run("st-gamma", ["lookup", "service", "vault"]).status != 0)

        let listing = try setup.run("alpha", ["consent", "list", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: listing.output) as? [String: Any])
        #expect(object["consent"] as? String == "new-readers")
        #expect(object["asking_groups"] as? [String] == ["default"])
        let consents = try #require(object["allowed"] as? [[String: Any]])
        #expect(consents.count == 1 && consents.first?["identity"] as? String == beta && consents.first?["group"] as? String == "default")
        #expect((consents.first?["executable_sha256"] as? String)?.count == 64)
        #expect(try setup.run("alpha", ["consent", "list"]).text.contains("new readers are asked in default"))

        // The consent holds across a restart of secretd.
        daemon.stop()
        try setup.fixture.waitUntilNameIsFree()
        let again = try setup.fixture.start()
        defer { again.stop() }
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).text == "consented-secret")

        // A changed program (another file moved over it) is a new reader again.
        try Self.replace("st-beta", in: setup)
        let changed = try setup.run("st-beta", ["lookup", "service", "vault"])
        #expect(changed.status != 0 && changed.errorOutput.contains("consent allow"), "\(changed.errorOutput)")

        // Revoke takes it back; a second revoke says there was none.
        #expect(try setup.run("alpha", ["consent", "revoke", beta, "default"]).status == 0)
        #expect(try setup.run("alpha", ["consent", "revoke", beta, "default"]).status == 1)
        #expect(try setup.run("alpha", ["consent", "allow", "not-an-identity", "default"]).status == 2)

        // The refusals are in the audit trail under the reader's identity.
        let trail = try setup.run("alpha", ["audit", "--json", "--identity", beta])
        #expect(trail.text.contains("\"event\":\"refused\""), "\(trail.text)")
    }

    @Test("with a pinentry: deny, allow once (this process), always allow (remembered, bound to the executable)")
    func asked() throws {
        let setup = try Setup()
        let pinentry = try ScriptedPinentry(in: setup.fixture.root, answers: [])
        setup.fixture.environment.merge(pinentry.environment) { $1 }
        try setup.fixture.writeConfiguration("pinentry = \(pinentry.program.path)\nconsent = new-readers\n")
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        #expect(try setup.run("alpha", ["set", "vault", "ann"], input: "asked-secret").status == 0)
        let beta = setup.identity("st-beta")

        try pinentry.setAnswers(["CANCEL"])
        let denied = try setup.run("st-beta", ["lookup", "service", "vault"])
        #expect(denied.status != 0 && denied.text.isEmpty)
        #expect(pinentry.count("CONFIRM") == 1)
        #expect(pinentry.log.contains("read the secrets of the access group “default”"), "\(pinentry.log)")
        #expect(pinentry.log.contains(beta))

        try pinentry.setAnswers(["NOTOK"])  // allow once: this process only
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).text == "asked-secret")
        try pinentry.setAnswers(["CANCEL"])
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).status != 0)  // a new process is asked again
        #expect(pinentry.count("CONFIRM") == 3)

        try pinentry.setAnswers(["OK"])  // always allow
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).text == "asked-secret")
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).text == "asked-secret")
        #expect(pinentry.count("CONFIRM") == 4)
        // Always allowing a reader leaves access-groups.conf alone: it is no membership.
        #expect(setup.policyText.isEmpty)
        // Python keyring unlocks the item as any locked one, and is asked once as well.
        try pinentry.setAnswers(["OK"])
        let python = try setup.fixture.run([
            "/usr/bin/python3", "-c", "import keyring; keyring.set_password('py.vault', 'ann', 'py-secret'); print(keyring.get_password('py.vault', 'ann'))",
        ])
        #expect(python.text == "py-secret\n", "\(python.errorOutput)")
        #expect(try setup.fixture.run(["/usr/bin/python3", "-c", "import keyring; print(keyring.get_password('py.vault', 'ann'))"]).text == "py-secret\n")
        #expect(pinentry.count("CONFIRM") == 5)

        // The same content under a new file (a reinstall) is still allowed; changed content asks.
        let path = setup.bin.appendingPathComponent("st-beta").path
        try ExecutableFile.copy(path, to: path + ".new")
        #expect(rename(path + ".new", path) == 0)
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).text == "asked-secret")
        #expect(pinentry.count("CONFIRM") == 5)
        try Self.replace("st-beta", in: setup)
        try pinentry.setAnswers(["CANCEL"])
        #expect(try setup.run("st-beta", ["lookup", "service", "vault"]).status != 0)
        #expect(pinentry.count("CONFIRM") == 6)
    }

    @Test("consent per group: a group with consent = new-readers asks, the default group (consent = no) does not")
    func perGroup() throws {
        let setup = try Setup()
        try setup.writePolicy("""
            [group "com.example.asks"]
            member = \(setup.identity("alpha"))
            member = \(setup.identity("st-alpha"))
            consent = new-readers

            """)
        let daemon = try setup.fixture.start()
        defer { daemon.stop() }
        #expect(try setup.run("alpha", ["set", "--group", "com.example.asks", "guarded", "ann"], input: "g").status == 0)
        #expect(try setup.run("alpha", ["set", "open", "ann"], input: "o").status == 0)
        #expect(try setup.run("st-alpha", ["lookup", "service", "open"]).text == "o")
        let refused = try setup.run("st-alpha", ["lookup", "service", "guarded"])
        #expect(refused.status != 0 && refused.errorOutput.contains("com.example.asks"), "\(refused.errorOutput)")
        let listing = try setup.run("alpha", ["consent", "list"])
        #expect(listing.text.contains("consent = no: new readers are asked in com.example.asks"), "\(listing.text)")
    }
}
