import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// `secretctl import gnome-keyring` into a running secretd, from keyring files the real
/// gnome-keyring-daemon wrote in this run (scripts/make-gnome-keyrings.py), checked field by
/// field through the Secret Service against what gnome-keyring itself showed.
@Suite struct GnomeKeyringImportTests {
    /// Lists every keyring secretd has with its items, as JSON, through secretstorage.
    static let dump = #"""
        import base64, json, secretstorage
        bus = secretstorage.dbus_init()
        out = {}
        for c in secretstorage.get_all_collections(bus):
            name = c.collection_path.rsplit("/", 1)[1]
            items = [{"label": i.get_label(), "attributes": i.get_attributes(),
                      "secret": base64.b64encode(i.get_secret()).decode(), "created": i.get_created(),
                      "modified": i.get_modified()} for i in c.get_all_items()]
            out[name] = {"label": c.get_label(), "created": c._collection.get_property("Created"),
                         "modified": c._collection.get_property("Modified"), "items": items}
        print(json.dumps(out))
        """#

    static var secretctl: String { SecretdFixture.secretctlPath }

    @Test("every keyring comes over whole: labels, attributes, secrets and times; again adds nothing; a bad file or password leaves the others")
    func importsRealFiles() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let files = try GnomeKeyringFiles.copy(to: fixture.root.appendingPathComponent("keyrings"))
        let keyrings = files.directory
        let manifest = files.manifest
        // A damaged keyring beside them: its import fails, the others go on.
        let work = try Data(contentsOf: keyrings.appendingPathComponent("work.keyring"))
        try work.prefix(work.count - 40).write(to: keyrings.appendingPathComponent("broken.keyring"))
        let before = try FileManager.default.contentsOfDirectory(atPath: keyrings.path).sorted().map {
            ($0, try Data(contentsOf: keyrings.appendingPathComponent($0)))
        }

        // Only the login password: "work" has its own, and nothing can ask for it.
        let first = try fixture.run([Self.secretctl, "import", "gnome-keyring", keyrings.path, "--password-stdin"], input: "login-pw\n")
        #expect(first.status == 6, "\(first.text) \(first.errorOutput)")
        #expect(first.text == "login: imported 7, skipped 0, failed 0\nbroken: imported 0, skipped 0, failed 2\nopen: imported 3, skipped 0, failed 0\nwork: imported 0, skipped 0, failed 2\n")
        #expect(first.errorOutput.contains("broken: the keyring file is damaged"), "\(first.errorOutput)")
        #expect(first.errorOutput.contains("work: skipped: the password given does not open it"), "\(first.errorOutput)")
        #expect(!first.errorOutput.contains("login-pw"))

        // Both passwords: work comes too, the rest is there already.
        let second = try fixture.run([Self.secretctl, "import", "gnome-keyring", keyrings.path, "--password-stdin"], input: "login-pw\nwork-pw\n")
        #expect(second.text == "login: imported 0, skipped 7, failed 0\nbroken: imported 0, skipped 0, failed 2\nopen: imported 0, skipped 3, failed 0\nwork: imported 2, skipped 0, failed 0\n",
                "\(second.errorOutput)")

        let dumped = try fixture.runPython(Self.dump, named: "dump.py")
        try #require(dumped.status == 0, "\(dumped.errorOutput)")
        let collections = try #require(JSONSerialization.jsonObject(with: dumped.output) as? [String: [String: Any]])
        for keyring in manifest["keyrings"] as? [[String: Any]] ?? [] {
            let name = try #require(keyring["name"] as? String)
            let collection = try #require(collections[name], "no keyring \(name) in secretd: \(collections.keys)")
            let header = keyring["binary_header"] as? [String: Any]
            if name != "login" {  // secretd's own login keyring was there first
                #expect(collection["label"] as? String == (header?["label"] as? String ?? keyring["label"] as? String))
                let times = header.map { [$0["ctime_field"], $0["mtime_field"]] } ?? [keyring["created"], keyring["modified"]]
                let numbers = times.compactMap { ($0 as? NSNumber)?.uint64Value }
                #expect((collection["created"] as? NSNumber)?.uint64Value == (header == nil ? numbers[0] : numbers.filter { $0 > 0 }.min()), "\(name)")
            }
            let items = collection["items"] as? [[String: Any]] ?? []
            let expectedItems = keyring["items"] as? [[String: Any]] ?? []
            #expect(items.count == expectedItems.count, "\(name)")
            for expected in expectedItems {
                let attributes = (expected["attributes"] as? [String: String] ?? [:]).filter { !$0.key.hasPrefix("gkr:compat:") }
                let found = items.filter { $0["label"] as? String == expected["label"] as? String && $0["attributes"] as? [String: String] == attributes }
                #expect(found.count == 1, "\(name): \(expected["label"] ?? "") \(attributes) in \(items.map { $0["attributes"] ?? "" })")
                guard let item = found.first else { continue }
                #expect(item["secret"] as? String == expected["secret"] as? String, "\(name): the secret of \(expected["label"] ?? "")")
                #expect((item["created"] as? NSNumber)?.uint64Value == (expected["created"] as? NSNumber)?.uint64Value)
                #expect((item["modified"] as? NSNumber)?.uint64Value == (expected["modified"] as? NSNumber)?.uint64Value)
            }
        }
        // The source files are only read.
        let after = try FileManager.default.contentsOfDirectory(atPath: keyrings.path).sorted().map {
            ($0, try Data(contentsOf: keyrings.appendingPathComponent($0)))
        }
        #expect(after.map(\.0) == before.map(\.0) && after.map(\.1) == before.map(\.1))
        // A plain lookup finds an imported item, as a client would.
        #expect(try fixture.run(["secret-tool", "lookup", "service", "vpn", "user", "bob"]).text == "vpn-secret")
    }

    @Test("on a terminal it asks for the login password, then for each keyring that opens with none known; a wrong one is asked again")
    func asksOnATerminal() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let keyrings = try GnomeKeyringFiles.copy(to: fixture.root.appendingPathComponent("keyrings")).directory
        // The login password, then a wrong one for work (it asks again), then the right one.
        let workPrompt = "Password of the keyring work (empty to skip it): "
        let typed = try TerminalSession.run(
            [Self.secretctl, "import", "gnome-keyring", keyrings.path],
            answers: [("Password of the gnome-keyring login keyring: ", "login-pw"), (workPrompt, "not-it"), (workPrompt, "work-pw")],
            environment: fixture.environment, scratch: fixture.root)
        #expect(typed.status == 0, "\(typed.screen)")
        #expect(typed.screen.contains("that password does not open work"), "\(typed.screen)")
        #expect(typed.screen.contains("login: imported 7, skipped 0, failed 0"), "\(typed.screen)")
        #expect(typed.screen.contains("open: imported 3, skipped 0, failed 0"), "\(typed.screen)")
        #expect(typed.screen.contains("work: imported 2, skipped 0, failed 0"), "\(typed.screen)")
        #expect(!typed.screen.contains("login-pw") && !typed.screen.contains("work-pw"), "a password was echoed: \(typed.screen)")
        #expect(try fixture.run(["secret-tool", "lookup", "service", "vpn", "user", "bob"]).text == "vpn-secret")
    }

    /// ImportKeyring called directly: a good item, then one secretd refuses (`bad` names how),
    /// into `name`; prints the error name, then the paths the keyring has (or `none`).
    static let halfBad = #"""
        import sys
        from jeepney import DBusAddress
        from jeepney.io.blocking import open_dbus_connection
        from jeepney.low_level import MessageType, HeaderFields
        from jeepney import new_method_call
        name, bad = sys.argv[1], sys.argv[2]
        B, ROOT = "org.freedesktop.secrets", "/org/freedesktop/secrets"
        conn = open_dbus_connection(bus="SESSION")
        def call(path, iface, method, sig="", body=()):
            reply = conn.send_and_get_reply(new_method_call(DBusAddress(path, B, iface), method, sig, body), timeout=30)
            if reply.header.message_type == MessageType.error:
                return ("error", reply.header.fields.get(HeaderFields.error_name))
            return ("ok", reply.body)
        session = call(ROOT, "org.freedesktop.Secret.Service", "OpenSession", "sv", ("plain", ("s", "")))[1][1]
        def item(label, attributes, secret=b"s3cret"):
            return ({"org.freedesktop.Secret.Item.Label": ("s", label), "org.freedesktop.Secret.Item.Attributes": ("a{ss}", attributes)},
                    (session, b"", secret, "text/plain"))
        good = item("good", {"kind": "good"})
        if bad == "label":
            wrong = item("x" * 70000, {"kind": "bad"})
        else:
            wrong = ({"org.freedesktop.Secret.Item.Label": ("s", "bad"), "org.freedesktop.Secret.Item.Created": ("t", 5)},
                     (session, b"", b"x", "text/plain"))
        outcome = call(ROOT, "io.github.secretd.Import1", "ImportKeyring", "sa{sv}(oayays)a(a{sv}(oayays))",
                       (name, {"org.freedesktop.Secret.Collection.Label": ("s", "Atomic")}, (session, b"", b"pw", "text/plain"), [good, wrong]))
        print(outcome[1] if outcome[0] == "error" else "imported")
        found = call(ROOT, "org.freedesktop.Secret.Service", "SearchItems", "a{ss}", ({"kind": "good"},))
        print(" ".join(found[1][0] + found[1][1]) or "none")
        """#

    @Test("a keyring with one item secretd refuses is not imported at all, new or existing")
    func wholeOrNothing() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        for (name, bad) in [("atomic", "label"), ("login", "label"), ("atomic", "times")] {
            let result = try fixture.runPython(Self.halfBad, named: "half-bad.py", [name, bad])
            #expect(result.text == "org.freedesktop.DBus.Error.InvalidArgs\nnone\n", "\(name), \(bad): \(result.text) \(result.errorOutput)")
        }
        let collections = try fixture.call(SecretServiceNames.Path.service, "org.freedesktop.DBus.Properties", "Get",
                                           "('org.freedesktop.Secret.Service', 'Collections')")
        #expect(!collections.contains("atomic"), "\(collections)")
    }

    @Test("no keyrings, --replace, a DIR without gnome-keyring: clear errors, exit statuses 1 and 2")
    func refusals() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let empty = fixture.root.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let none = try fixture.run([Self.secretctl, "import", "gnome-keyring", empty.path, "--password-stdin"], input: "x\n")
        #expect(none.status == 1 && none.errorOutput.contains("no gnome-keyring keyrings"), "\(none.errorOutput)")
        let replace = try fixture.run([Self.secretctl, "import", "gnome-keyring", empty.path, "--replace"])
        #expect(replace.status == 2, "\(replace.errorOutput)")
        let stray = try fixture.run([Self.secretctl, "import", "some.csv", empty.path])
        #expect(stray.status == 2 && stray.errorOutput.contains("gnome-keyring, oo7 and kwallet only"), "\(stray.errorOutput)")
    }

    @Test("oo7's keyrings and a libsecret file keyring (version 1 files libsecret wrote) come over whole; again adds nothing; a wrong password leaves the others")
    func importsVersion1Files() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let directory = fixture.root.appendingPathComponent("v1")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileBackendKeyring.write(
            [.init(label: "Mail", attributes: [("service", "mail"), ("account", "alice")], secret: "s3cr3t ✓"),
             .init(label: "Note", attributes: [("service", "note")], secret: "two\nlines")],
            to: directory.appendingPathComponent("login.keyring"), password: "login-pw", scratch: fixture.root)
        try FileBackendKeyring.write(
            [.init(label: "VPN", attributes: [("service", "vpn"), ("account", "bob")], secret: "vpn-pw")],
            to: directory.appendingPathComponent("work.keyring"), password: "work-pw", scratch: fixture.root)
        let before = try Data(contentsOf: directory.appendingPathComponent("work.keyring"))

        let first = try fixture.run([Self.secretctl, "import", "oo7", directory.path, "--password-stdin"], input: "login-pw\nwrong\n")
        #expect(first.status == 6, "\(first.text) \(first.errorOutput)")
        #expect(first.text == "login: imported 2, skipped 0, failed 0\nwork: imported 0, skipped 0, failed 1\n", "\(first.errorOutput)")
        #expect(first.errorOutput.contains("work: skipped: the password given does not open it"), "\(first.errorOutput)")
        #expect(try fixture.run(["secret-tool", "lookup", "service", "mail", "account", "alice"]).text == "s3cr3t ✓")
        #expect(try fixture.run(["secret-tool", "lookup", "service", "note"]).text == "two\nlines")

        let second = try fixture.run([Self.secretctl, "import", "oo7", directory.path, "--password-stdin"], input: "login-pw\nwork-pw\n")
        #expect(second.status == 0, "\(second.errorOutput)")
        #expect(second.text == "login: imported 0, skipped 2, failed 0\nwork: imported 1, skipped 0, failed 0\n", "\(second.errorOutput)")
        let work = try fixture.call(
            "/org/freedesktop/secrets/collection/work", "org.freedesktop.DBus.Properties", "Get", "('org.freedesktop.Secret.Collection', 'Label')")
        #expect(work.contains("'work'"), "\(work)")
        #expect(try Data(contentsOf: directory.appendingPathComponent("work.keyring")) == before, "the source was changed")

        // One libsecret file keyring, as a Flatpak app's: its default keyring goes into the login keyring.
        let app = fixture.root.appendingPathComponent("app-keyrings")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        try FileBackendKeyring.write(
            [.init(label: "App token", attributes: [("service", "app"), ("account", "carol")], secret: "token")],
            to: app.appendingPathComponent("default.keyring"), password: "app-pw", scratch: fixture.root)
        let single = try fixture.run(
            [Self.secretctl, "import", "oo7", app.appendingPathComponent("default.keyring").path, "--password-stdin"], input: "app-pw\n")
        #expect(single.text == "login: imported 1, skipped 0, failed 0\n", "\(single.errorOutput)")
        #expect(try fixture.run(["secret-tool", "lookup", "service", "app", "account", "carol"]).text == "token")

        // gnome-keyring's import reads a version 1 file too (by its version byte, not its place).
        let mixed = try fixture.run([Self.secretctl, "import", "gnome-keyring", directory.path, "--password-stdin"], input: "login-pw\nwork-pw\n")
        #expect(mixed.text == "login: imported 0, skipped 2, failed 0\nwork: imported 0, skipped 1, failed 0\n", "\(mixed.errorOutput)")
        let missing = try fixture.run([Self.secretctl, "import", "oo7", fixture.root.appendingPathComponent("none").path])
        #expect(missing.status == 1 && missing.errorOutput.contains("no oo7 keyrings:"), "\(missing.errorOutput)")
        #expect(daemon.isRunning)
    }
}
