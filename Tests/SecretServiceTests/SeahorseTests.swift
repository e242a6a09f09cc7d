import Foundation
import KeychainTestSupport
import Testing

/// Seahorse ("Passwords and Keys"), the GUI people manage their keyring with, on secretd: a
/// real Seahorse in Xvfb, driven as a person would (`scripts/seahorse-drive.py`: AT-SPI to find
/// and read widgets, xdotool to click and type), secretd's prompts answered by the scripted
/// pinentry. After every step the driver records what the window showed and what the Secret
/// Service holds; the screenshots of each step stay in `.build/test-artifacts/seahorse/`
/// (`KEYCHAIN_TEST_ARTIFACTS` elsewhere).
@Suite struct SeahorseTests {
    /// `scripts/seahorse-drive.py` of this checkout.
    static var driver: URL { DBusClients.directory.deletingLastPathComponent().appendingPathComponent("seahorse-drive.py") }

    /// Where the screenshots go.
    static var artifacts: URL {
        if let directory = ProcessInfo.processInfo.environment["KEYCHAIN_TEST_ARTIFACTS"] {
            return URL(fileURLWithPath: directory).appendingPathComponent("seahorse")
        }
        return DBusClients.directory.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/test-artifacts/seahorse")
    }

    /// One step of the driver's report.
    struct Step {
        var ui: [String: Any]
        /// Each keyring by name: its label, whether it is locked, its items (label: secret).
        var state: [String: [String: Any]]

        func items(_ keyring: String) -> [String: String]? { state[keyring]?["items"] as? [String: String] }
        func isLocked(_ keyring: String) -> Bool? { state[keyring]?["locked"] as? Bool }
    }

    @Test("Seahorse lists secretd's keyrings and items, shows and edits a secret and a label, adds and deletes an item, locks, unlocks, changes the password, adds and deletes a keyring")
    func seahorse() throws {
        let fixture = try SecretdFixture()
        // secretd's prompts, in the order Seahorse causes them: unlock, change password
        // (current, new), the new keyring's password.
        let pinentry = try ScriptedPinentry(in: fixture.root, answers: ["login-password", "login-password", "new-password", "work-password"])
        fixture.environment.merge(pinentry.environment) { $1 }
        try fixture.writeConfiguration("pinentry = \(pinentry.program.path)\n")
        let daemon = try fixture.start()
        defer { daemon.stop() }
        for (label, service, account, secret) in [("Mail account", "mail", "alice", "s3cret"), ("Second item", "web", "bob", "x")] {
            let stored = try fixture.run(["secret-tool", "store", "--label=\(label)", "service", service, "account", account], input: secret)
            try #require(stored.status == 0, "\(stored.errorOutput)")
        }

        let desktop = try VirtualDesktop(on: fixture)
        defer { desktop.stop() }
        try? FileManager.default.removeItem(at: Self.artifacts)
        try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)
        let environment = fixture.environment.merging(desktop.environment) { $1 }
        // What the person types into Seahorse: the edited item's new secret, the added item's.
        let run = try CommandResult.run(
            ["/usr/bin/python3", "-B", Self.driver.path, Self.artifacts.path], input: Data("n3w-secret\nadded-secret\n".utf8),
            environment: environment, scratch: fixture.root, timeout: 240)
        let lines = run.text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        var steps: [String: Step] = [:]
        for line in lines {
            guard let name = line["step"] as? String else { continue }
            steps[name] = Step(ui: line["ui"] as? [String: Any] ?? [:], state: line["state"] as? [String: [String: Any]] ?? [:])
        }
        let failure = lines.first { $0["step"] as? String == "failed" }?["error"] as? String
        #expect(run.status == 0 && failure == nil,
                "the driver stopped: \(failure ?? "exit \(run.status)"); screenshots in \(Self.artifacts.path); \(run.errorOutput)")

        // It lists the login keyring and its items, and shows an item's secret.
        let opened = try #require(steps["opened"])
        #expect((opened.ui["sidebar"] as? [String])?.contains("Login") == true, "\(opened.ui)")
        #expect(opened.ui["items"] as? [String] == ["Mail account", "Second item"], "\(opened.ui)")
        let shown = try #require(steps["shown"])
        #expect(shown.ui["description"] as? String == "Mail account")
        #expect(shown.ui["password"] as? String == "s3cret")
        // Its edits reach secretd: a label and a secret; an added item (a note); a deleted one.
        #expect(steps["edited"]?.items("login") == ["Mail (edited)": "n3w-secret", "Second item": "x"])
        let added = try #require(steps["added"])
        #expect(added.items("login")?["Added in Seahorse"] == "added-secret", "\(added.state)")
        #expect(added.ui["items"] as? [String] == ["Added in Seahorse", "Mail (edited)", "Second item"], "\(added.ui)")
        let deleted = try #require(steps["deleted"])
        #expect(deleted.items("login") == ["Mail (edited)": "n3w-secret", "Added in Seahorse": "added-secret"])
        #expect(deleted.ui["items"] as? [String] == ["Added in Seahorse", "Mail (edited)"], "\(deleted.ui)")
        // Lock and unlock (through secretd's prompt), change the password (its prompt again).
        #expect(steps["locked"]?.isLocked("login") == true)
        #expect(steps["unlocked"]?.isLocked("login") == false)
        #expect(steps["unlocked"]?.ui["items"] as? [String] == ["Added in Seahorse", "Mail (edited)"])
        #expect(steps["password changed"]?.isLocked("login") == false)
        #expect(pinentry.count("GETPIN") == 4, "\(pinentry.log)")
        // A new keyring, then deleted.
        let keyringAdded = try #require(steps["keyring added"])
        #expect(keyringAdded.state["work"]?["label"] as? String == "Work", "\(keyringAdded.state)")
        #expect(keyringAdded.items("work") == [:])
        #expect((keyringAdded.ui["sidebar"] as? [String])?.contains("Work") == true, "\(keyringAdded.ui)")
        #expect(steps["keyring deleted"].map { $0.state["work"] == nil } == true)

        // The new password opens the login keyring (gnome-keyring's UnlockWithMasterPassword).
        func login(isLocked: Bool) throws -> Bool {
            try fixture.call("/org/freedesktop/secrets/collection/login", "org.freedesktop.DBus.Properties", "Get",
                             "('org.freedesktop.Secret.Collection', 'Locked')") == "(<\(isLocked)>,)"
        }
        _ = try fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Lock",
                             "([objectpath '/org/freedesktop/secrets/collection/login'],)")
        #expect(try login(isLocked: true))
        let unlocked = try fixture.runPython(LiveImportTests.unlock, named: "unlock.py", ["login", "new-password"])
        #expect(unlocked.status == 0, "\(unlocked.errorOutput)")
        #expect(try login(isLocked: false), "\(daemon.log)")
        let lookup = try fixture.run(["secret-tool", "lookup", "service", "mail", "account", "alice"])
        #expect(lookup.text == "n3w-secret", "\(lookup.errorOutput)")
    }
}
