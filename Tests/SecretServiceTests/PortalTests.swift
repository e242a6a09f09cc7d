import Foundation
import KeychainTestSupport
import Testing

/// The desktop portal's Secret backend (`org.freedesktop.impl.portal.Secret`): called directly
/// with a pipe as xdg-desktop-portal calls it (`scripts/dbus-clients/portal-client.py`), and
/// end to end through the real xdg-desktop-portal with libsecret's file backend inside a
/// Flatpak-style sandbox (``FlatpakSandbox``).
@Suite struct PortalTests {
    /// One `RetrieveSecret` as the client printed it.
    struct Retrieval: Equatable {
        var app: String
        var response: Int?
        var error: String?
        var key: String
    }

    /// The test's Python, as secretd identifies it (`exe:` of the real file).
    static var python: String { URL(fileURLWithPath: "/usr/bin/python3").resolvingSymlinksInPath().path }

    /// A fixture whose portal frontend is this test's Python client, with `answers` for pinentry.
    static func fixture(answers: [String] = []) throws -> (SecretdFixture, ScriptedPinentry) {
        let fixture = try SecretdFixture()
        let pinentry = try ScriptedPinentry(in: fixture.root, answers: answers)
        fixture.environment.merge(pinentry.environment) { $1 }
        try fixture.writeConfiguration("pinentry = \(pinentry.program.path)\nportal-frontends = exe:\(python)\n")
        return (fixture, pinentry)
    }

    static func retrievals(_ result: CommandResult) -> [Retrieval] {
        result.text.split(separator: "\n").compactMap { line in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                let app = object["app"] as? String
            else { return nil }
            return Retrieval(app: app, response: object["response"] as? Int, error: object["error"] as? String,
                             key: object["key"] as? String ?? "")
        }
    }

    /// What `app-key-search.py` found for each app id, run by an ordinary client or inside `sandbox`.
    static func search(_ fixture: SecretdFixture, _ apps: [String], in sandbox: FlatpakSandbox? = nil) throws -> [String: [String]] {
        var command = DBusClients.command("app-key-search.py", apps)
        if let sandbox { command = try sandbox.wrap(command, fixture: fixture) }
        let result = try fixture.run(command)
        try #require(result.status == 0, "\(result.errorOutput)")
        return try #require((try JSONSerialization.jsonObject(with: Data(result.text.utf8))) as? [String: [String]])
    }

    @Test("RetrieveSecret writes each app its own 64-byte key, the same every time and after a restart; bad app ids and other callers are refused")
    func keys() throws {
        let (fixture, _) = try Self.fixture()
        var daemon = try fixture.start()
        defer { daemon.stop() }
        let first = try fixture.runClient("portal-client.py", ["retrieve", "org.example.One", "org.example.One", "org.example.Two"])
        let got = Self.retrievals(first)
        try #require(got.count == 3, "\(first.text) \(first.errorOutput) \(daemon.log)")
        #expect(got.allSatisfy { $0.response == 0 && $0.key.count == 128 }, "\(got)")
        #expect(got[0].key == got[1].key)
        #expect(got[0].key != got[2].key)

        // The key item: in the app's own group, so no ordinary client sees it, nor another app;
        // the app itself (talking to the Secret Service directly) does.
        #expect(try Self.search(fixture, ["org.example.One", "org.example.Two"]) == ["org.example.One": [], "org.example.Two": []])
        #expect(try fixture.run(["secret-tool", "search", "--all", "app_id", "org.example.One"]).text.isEmpty)
        if FlatpakSandbox.isAvailable {
            let other = FlatpakSandbox(appID: "org.example.Three", talkNames: ["org.freedesktop.secrets"])
            #expect(try Self.search(fixture, ["org.example.One", "org.example.Two"], in: other)
                    == ["org.example.One": [], "org.example.Two": []])
            let own = FlatpakSandbox(appID: "org.example.One", talkNames: ["org.freedesktop.secrets"])
            #expect(try Self.search(fixture, ["org.example.One", "org.example.Two"], in: own)["org.example.One"]?.count == 1)
            // An app cannot ask the backend itself (only the portal frontend may).
            let asked = try fixture.run(try own.wrap(DBusClients.command("portal-client.py", ["retrieve", "org.example.Two"]),
                                                     fixture: fixture))
            #expect(Self.retrievals(asked).map(\.error) == ["org.freedesktop.DBus.Error.AccessDenied"], "\(asked.text) \(asked.errorOutput)")
        }

        // Refused: no app (a program outside a sandbox), a malformed id; nothing is written.
        let bad = Self.retrievals(try fixture.runClient("portal-client.py", ["retrieve", "", "not an id", "org..x", "0rg.example.X"]))
        #expect(bad.map(\.error) == Array(repeating: "org.freedesktop.DBus.Error.InvalidArgs", count: 4), "\(bad)")
        #expect(bad.allSatisfy { $0.key.isEmpty })

        // Durable: the same key after a restart.
        daemon.stop()
        daemon = try fixture.start()
        let again = Self.retrievals(try fixture.runClient("portal-client.py", ["retrieve", "org.example.One"]))
        #expect(again.map(\.key) == [got[0].key])

        // secretctl lists the keys (never their bytes) and deletes one with a warning.
        let listed = try fixture.run([SecretdFixture.secretctlPath, "app-keys", "--json"])
        #expect(listed.status == 0, "\(listed.errorOutput)")
        #expect(listed.text.contains("\"app\":\"org.example.One\"") && listed.text.contains("\"app\":\"org.example.Two\""), "\(listed.text)")
        #expect(!listed.text.contains(got[0].key))
        let refused = try fixture.run([SecretdFixture.secretctlPath, "app-keys", "delete", "org.example.Two"])
        #expect(refused.status != 0 && refused.errorOutput.contains("unreadable"), "\(refused.errorOutput)")
        let deleted = try fixture.run([SecretdFixture.secretctlPath, "app-keys", "delete", "--yes", "org.example.Two"])
        #expect(deleted.status == 0, "\(deleted.errorOutput)")
        #expect(deleted.errorOutput.contains("unreadable"), "\(deleted.errorOutput)")
        let remaining = try fixture.run([SecretdFixture.secretctlPath, "app-keys", "--json"])
        #expect(!remaining.text.contains("org.example.Two") && remaining.text.contains("org.example.One"), "\(remaining.text)")
        let fresh = Self.retrievals(try fixture.runClient("portal-client.py", ["retrieve", "org.example.Two"]))
        #expect(fresh.first?.response == 0 && fresh.first?.key != got[2].key)
    }

    @Test("an app key brought over from gnome-keyring (ImportKeyring, as secretctl import sends it) goes into the app's group and stays the app's key")
    func importedKey() throws {
        let (fixture, _) = try Self.fixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let opened = try fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "OpenSession", "('plain', <''>)")
        let session = try #require(opened.components(separatedBy: "objectpath '").last?.split(separator: "'").first)
        let key = (0..<64).map { "byte 0x\(String(format: "%02x", $0 * 3 + 1))" }.joined(separator: ", ")
        let imported = try fixture.call(
            "/org/freedesktop/secrets", "io.github.secretd.Import1", "ImportKeyring",
            "('login', @a{sv} {}, (objectpath '\(session)', @ay [], @ay [], 'text/plain'), "
                + "[({'org.freedesktop.Secret.Item.Label': <'Application key for org.example.Imported'>, "
                + "'org.freedesktop.Secret.Item.Attributes': <{'app_id': 'org.example.Imported', 'xdg:schema': 'org.freedesktop.portal.Secret'}>}, "
                + "(objectpath '\(session)', @ay [], [\(key)], 'application/octet-stream'))])")
        #expect(imported.contains("uint32 1"), "\(imported)")
        #expect(try Self.search(fixture, ["org.example.Imported"]) == ["org.example.Imported": []])
        let got = Self.retrievals(try fixture.runClient("portal-client.py", ["retrieve", "org.example.Imported"]))
        #expect(got.map(\.key) == [(0..<64).map { String(format: "%02x", $0 * 3 + 1) }.joined()], "\(got) \(daemon.log)")
    }

    @Test("a locked keyring: the portal's request waits on secretd's prompt, a dismissed prompt or Close answers it as cancelled, the password gives the key")
    func lockedKeyring() throws {
        let (fixture, pinentry) = try Self.fixture(answers: ["CANCEL"])
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let key = Self.retrievals(try fixture.runClient("portal-client.py", ["retrieve", "org.example.One"])).first?.key
        _ = try fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Lock",
                             "([objectpath '/org/freedesktop/secrets/collection/login'],)")

        let dismissed = Self.retrievals(try fixture.runClient("portal-client.py", ["retrieve", "org.example.One"]))
        #expect(dismissed.map(\.response) == [1] && dismissed.first?.key == "", "\(dismissed) \(daemon.log)")
        #expect(pinentry.count("GETPIN") == 1)
        #expect(pinentry.log.contains("org.example.One"), "the dialog names the app: \(pinentry.log)")

        // Close while the person has not answered: the pinentry goes away, the call is answered.
        try pinentry.setAnswers(["WAIT"])
        let marker = fixture.root.appendingPathComponent("asked")
        let watcher = try SupervisedProcess(
            ["/bin/sh", "-c", "while ! grep -q GETPIN \"$0.log\" 2>/dev/null || [ $(grep -c GETPIN \"$0.log\") -lt 2 ]; do sleep 0.1; done; touch \"$1\"",
             pinentry.answers.path, marker.path],
            environment: fixture.environment, logURL: fixture.root.appendingPathComponent("watcher.log"))
        defer { watcher.stop() }
        let closed = try fixture.runClient("portal-client.py", ["close", "org.example.One", marker.path])
        #expect(closed.text.contains("\"close\": \"method_return\""), "\(closed.text) \(closed.errorOutput)")
        #expect(Self.retrievals(closed).map(\.response) == [1], "\(closed.text)")
        let pinentryGone = (0..<50).contains { _ in
            usleep(100_000)
            return pinentry.pids.last.map { kill($0, 0) != 0 } ?? false
        }
        #expect(pinentryGone, "the pinentry of the closed request still runs")

        // The password: the same key as before the lock.
        try pinentry.setAnswers(["login-password"])
        let unlocked = Self.retrievals(try fixture.runClient("portal-client.py", ["retrieve", "org.example.One"]))
        #expect(unlocked.map(\.key) == [key ?? "?"], "\(unlocked) \(daemon.log)")
    }

    @Test("through the real xdg-desktop-portal: libsecret in a Flatpak-style sandbox keeps a secret in its file keyring under the key secretd gives, and reads it back after secretd restarts")
    func realPortal() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/libexec/xdg-desktop-portal"),
                     "needs the Debian package xdg-desktop-portal (the Makefile's DEB_TEST)")
        try #require(FlatpakSandbox.isAvailable, "needs the Debian packages bubblewrap and xdg-dbus-proxy (the Makefile's DEB_TEST)")
        let fixture = try SecretdFixture()
        var daemon = try fixture.start()
        defer { daemon.stop() }
        // The frontend on the test's bus, reading only our .portal file, in a desktop its UseIn
        // names: xdg-desktop-portal 1.17 and later (Debian 13's 1.20) choose a backend by
        // portals.conf or by the desktop's name, and have no Secret portal without either; 1.16
        // (Debian 12) takes the one backend there is whatever the desktop.
        let portals = fixture.root.appendingPathComponent("portals")
        try FileManager.default.createDirectory(at: portals, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: DBusClients.directory.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("portal/secretd.portal"), to: portals.appendingPathComponent("secretd.portal"))
        let frontend = try SupervisedProcess(
            ["/usr/libexec/xdg-desktop-portal", "--replace"],
            environment: fixture.environment.merging(["XDG_DESKTOP_PORTAL_DIR": portals.path, "XDG_CURRENT_DESKTOP": "GNOME"]) { $1 },
            logURL: fixture.root.appendingPathComponent("xdg-desktop-portal.log"))
        defer { frontend.stop() }
        try fixture.control.waitForOwner(of: "org.freedesktop.portal.Desktop", startedBy: frontend)

        // The app's data directory, as flatpak gives it (~/.var/app/ID/data).
        let appID = "org.example.Notes"
        let data = fixture.root.appendingPathComponent(".var/app/\(appID)/data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let sandbox = FlatpakSandbox(appID: appID, writable: [data], environment: ["XDG_DATA_HOME": data.path, "HOME": fixture.root.path])
        let stored = try CommandResult.run(
            try sandbox.wrap(["secret-tool", "store", "--label=Notes sync", "service", "notes", "account", "alice"], fixture: fixture),
            input: Data("portal-secret".utf8), environment: fixture.environment, scratch: fixture.root, timeout: 30)
        #expect(stored.status == 0, "\(stored.errorOutput) \(frontend.log) \(daemon.log)")
        let keyring = data.appendingPathComponent("keyrings/default.keyring")
        #expect(FileManager.default.fileExists(atPath: keyring.path), "libsecret used its file backend")
        let file = try Data(contentsOf: keyring)
        #expect(file.range(of: Data("portal-secret".utf8)) == nil, "the secret is encrypted in the file")

        // Read back after each of five restarts of secretd (an answer that came too soon made
        // libsecret 0.20.5 wait forever: Daemon.answerDelay); a hang shows what the frontend and
        // secretd said.
        var read = try fixture.run(["true"])
        for round in 1...5 {
            daemon.stop()
            daemon = try fixture.start()
            do {
                read = try CommandResult.run(
                    try sandbox.wrap(["secret-tool", "lookup", "service", "notes", "account", "alice"], fixture: fixture),
                    environment: fixture.environment, scratch: fixture.root, timeout: 30)
            } catch {
                Issue.record("restart \(round): \(error)\nxdg-desktop-portal: \(frontend.log)\nsecretd: \(daemon.log)")
                return
            }
            guard read.text == "portal-secret" else { break }
        }
        #expect(read.status == 0 && read.text == "portal-secret", "\(read.text) \(read.errorOutput) \(frontend.log)")
        // secretd holds the app's key, which the person can see with secretctl.
        let listed = try fixture.run([SecretdFixture.secretctlPath, "app-keys"])
        #expect(listed.text.contains(appID), "\(listed.text) \(listed.errorOutput)")
        // Nothing of it reaches ordinary clients.
        #expect(try fixture.run(["secret-tool", "search", "--all", "app_id", appID]).text.isEmpty)
    }
}
