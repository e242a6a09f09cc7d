import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// `secretctl import secret-service`: the keyrings of a running gnome-keyring-daemon (loaded
/// from files the real daemon wrote, scripts/make-gnome-keyrings.py), read over D-Bus while it
/// owns org.freedesktop.secrets, into secretd's database; then secretd, started on that
/// database, shows every keyring and item as gnome-keyring showed it.
@Suite struct LiveImportTests {
    /// Every keyring of the provider on the bus with its items, as JSON, through secretstorage.
    /// gnome-keyring's own bookkeeping (integer markers, saved keyring passwords) is left out,
    /// as the import leaves it out.
    static let dump = #"""
        import base64, json, secretstorage
        bus = secretstorage.dbus_init()
        out = {}
        for c in secretstorage.get_all_collections(bus):
            name = c.collection_path.rsplit("/", 1)[1]
            if name == "session":
                continue
            if c.is_locked():
                c.unlock()
            items = []
            for i in c.get_all_items():
                attributes = {k: v for k, v in i.get_attributes().items() if not k.startswith("gkr:compat:")}
                if attributes.get("xdg:schema") == "org.gnome.keyring.ChainedKeyring":
                    continue
                items.append({"label": i.get_label(), "attributes": attributes,
                              "secret": base64.b64encode(i.get_secret()).decode(),
                              "created": i.get_created(), "modified": i.get_modified()})
            out[name] = {"label": c.get_label(), "created": c._collection.get_property("Created"),
                         "items": sorted(items, key=lambda i: (i["label"], json.dumps(i["attributes"], sort_keys=True)))}
        print(json.dumps(out, sort_keys=True))
        """#

    /// Unlocks a keyring with its password (argv: name, password) through gnome-keyring's
    /// extension, which secretd serves too; for gnome-keyring, as a person answering its prompt would.
    static let unlock = #"""
        import sys
        from jeepney import DBusAddress, new_method_call
        from jeepney.io.blocking import open_dbus_connection
        conn = open_dbus_connection(bus="SESSION")
        B, ROOT = "org.freedesktop.secrets", "/org/freedesktop/secrets"
        def call(path, iface, method, sig="", body=()):
            reply = conn.send_and_get_reply(new_method_call(DBusAddress(path, B, iface), method, sig, body), timeout=30)
            return reply.body
        session = call(ROOT, "org.freedesktop.Secret.Service", "OpenSession", "sv", ("plain", ("s", "")))[1]
        call(ROOT, "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface", "UnlockWithMasterPassword", "o(oayays)",
             (ROOT + "/collection/" + sys.argv[1], (session, b"", sys.argv[2].encode(), "text/plain")))
        """#

    static var secretctl: String { GnomeKeyringImportTests.secretctl }

    /// A fixture whose HOME holds gnome-keyring's test keyrings, with gnome-keyring-daemon
    /// serving them (its login keyring unlocked, the others locked).
    static func startGnomeKeyring(_ fixture: SecretdFixture) throws -> SupervisedProcess {
        let data = fixture.root.appendingPathComponent(".local/share")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        _ = try GnomeKeyringFiles.copy(to: data.appendingPathComponent("keyrings"))
        let daemon = try SupervisedProcess(
            ["gnome-keyring-daemon", "--foreground", "--components=secrets", "--unlock"], environment: fixture.environment,
            standardInput: Data("login-pw".utf8), logURL: fixture.root.appendingPathComponent("gnome-keyring.log"))
        try fixture.control.waitForOwner(of: TestEnvironment.busName, startedBy: daemon)
        return daemon
    }

    /// The dump of the provider on the fixture's bus, parsed.
    static func keyrings(_ fixture: SecretdFixture) throws -> [String: [String: Any]] {
        let dumped = try fixture.runPython(dump, named: "dump.py")
        try #require(dumped.status == 0, "\(dumped.errorOutput)")
        return try #require(JSONSerialization.jsonObject(with: dumped.output) as? [String: [String: Any]])
    }

    @Test("a locked gnome-keyring keyring comes over once the person answers gnome-keyring's own prompt (gcr-prompter in Xvfb)")
    func importsThroughGnomeKeyringPrompt() throws {
        let fixture = try SecretdFixture()
        let desktop = try VirtualDesktop(on: fixture)
        defer { desktop.stop() }
        fixture.environment.merge(desktop.environment) { $1 }
        let gnomeKeyring = try Self.startGnomeKeyring(fixture)
        defer { gnomeKeyring.stop() }
        // gnome-keyring's prompter, which D-Bus would start (the test's bus activates nothing).
        let prompter = try SupervisedProcess(
            ["/usr/libexec/gcr-prompter"], environment: fixture.environment, logURL: fixture.root.appendingPathComponent("prompter.log"))
        defer { prompter.stop() }
        try fixture.control.waitForOwner(of: "org.gnome.keyring.SystemPrompter", startedBy: prompter)
        // The person, who types work's password when gnome-keyring asks for it.
        let person = try SupervisedProcess(
            ["/usr/bin/python3", "-B", DBusClients.directory.deletingLastPathComponent().appendingPathComponent("answer-gcr-prompt.py").path],
            environment: fixture.environment, standardInput: Data("work-pw".utf8), logURL: fixture.root.appendingPathComponent("person.log"))
        defer { person.stop() }

        let imported = try fixture.run([Self.secretctl, "import", "secret-service", "--password-stdin"], input: "secretd-pw\n")
        #expect(imported.status == 0, "\(imported.text) \(imported.errorOutput) \(person.log)")
        #expect(imported.text == "login: imported 7, skipped 0, failed 0\nopen: imported 3, skipped 0, failed 0\nwork: imported 2, skipped 0, failed 0\n",
                "\(imported.errorOutput) \(person.log)")
        #expect(person.waitForExit(timeout: 10) == 0)
        #expect(person.log.contains("answered An application wants access to the keyring “work”"), "\(person.log)")
    }

    @Test("every keyring of the running gnome-keyring comes over: labels, attributes, secrets, times; a locked one is skipped until unlocked; again adds nothing")
    func importsFromRunningGnomeKeyring() throws {
        let fixture = try SecretdFixture()
        let gnomeKeyring = try Self.startGnomeKeyring(fixture)
        defer { gnomeKeyring.stop() }

        // "work" is locked, and nothing can show gnome-keyring's prompt here.
        let first = try fixture.run([Self.secretctl, "import", "secret-service", "--password-stdin"], input: "secretd-pw\n")
        #expect(first.status == 6, "\(first.text) \(first.errorOutput)")
        #expect(first.text == "login: imported 7, skipped 0, failed 0\nopen: imported 3, skipped 0, failed 0\nwork: imported 0, skipped 0, failed 2\n",
                "\(first.errorOutput)")
        #expect(first.errorOutput.contains("work: skipped: it is locked"), "\(first.errorOutput)")
        #expect(!first.errorOutput.contains("secretd-pw"))

        // Unlocked (as a person answering its prompt would): it comes too, the rest is there.
        let unlocked = try fixture.runPython(Self.unlock, named: "unlock.py", ["work", "work-pw"])
        try #require(unlocked.status == 0, "\(unlocked.errorOutput)")
        let second = try fixture.run([Self.secretctl, "import", "secret-service", "--password-stdin"], input: "secretd-pw\n")
        #expect(second.status == 0, "\(second.errorOutput)")
        #expect(second.text == "login: imported 0, skipped 7, failed 0\nopen: imported 0, skipped 3, failed 0\nwork: imported 2, skipped 0, failed 0\n",
                "\(second.errorOutput)")
        #expect(second.errorOutput.contains("secretctl setup"), "\(second.errorOutput)")

        // A wrong password for secretd's login keyring: nothing is read or written.
        let wrong = try fixture.run([Self.secretctl, "import", "secret-service", "--password-stdin"], input: "not-it\n")
        #expect(wrong.status == 4 && wrong.text.isEmpty, "\(wrong.text) \(wrong.errorOutput)")
        #expect(wrong.errorOutput.contains("not the password of secretd's login keyring"), "\(wrong.errorOutput)")

        let source = try Self.keyrings(fixture)
        gnomeKeyring.stop()
        try fixture.waitUntilNameIsFree()

        // secretd on the database the import wrote: the same keyrings, items and times.
        let secretd = try fixture.start(
            ["--unlock", "--data-dir", fixture.root.appendingPathComponent(".local/share/secretd").path], input: "secretd-pw")
        defer { secretd.stop() }
        // Keyrings new to secretd got the login keyring's password; --unlock opens login only.
        for name in ["open", "work"] {
            let opened = try fixture.runPython(Self.unlock, named: "unlock.py", [name, "secretd-pw"])
            #expect(opened.status == 0, "\(name): \(opened.errorOutput)")
        }
        let imported = try Self.keyrings(fixture)
        #expect(Set(imported.keys) == Set(source.keys), "\(imported.keys) \(source.keys)")
        for (name, keyring) in source {
            let copy = try #require(imported[name], "no keyring \(name) in secretd")
            #expect(
                try JSONSerialization.data(withJSONObject: copy["items"] ?? [], options: .sortedKeys)
                    == JSONSerialization.data(withJSONObject: keyring["items"] ?? [], options: .sortedKeys),
                "\(name): \(copy["items"] ?? []) against \(keyring["items"] ?? [])")
            if name != "login" {  // secretd's login keyring was created by the import, under its own label
                #expect(copy["label"] as? String == keyring["label"] as? String, "\(name)")
                #expect((copy["created"] as? NSNumber)?.uint64Value == (keyring["created"] as? NSNumber)?.uint64Value, "\(name)")
            }
        }
        #expect(try fixture.run(["secret-tool", "lookup", "service", "vpn", "user", "bob"]).text == "vpn-secret")
    }

    /// A KeePassXC database (imported by keepassxc-cli) with two entries in its root group,
    /// which it exposes over the Secret Service (FDO_SECRETS_EXPOSED_GROUP names the group).
    static let keepassXML = #"""
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <KeePassFile>
        	<Meta>
        		<Generator>KeePassXC</Generator>
        		<DatabaseName>Passwords</DatabaseName>
        		<CustomData>
        			<Item>
        				<Key>FDO_SECRETS_EXPOSED_GROUP</Key>
        				<Value>{7f93e67c-7bf8-4f5b-89c7-29871957ea28}</Value>
        			</Item>
        		</CustomData>
        	</Meta>
        	<Root>
        		<Group>
        			<UUID>f5PmfHv4T1uJxymHGVfqKA==</UUID>
        			<Name>Passwords</Name>
        			<Entry>
        				<UUID>AAAAAAAAAAAAAAAAAAAAAQ==</UUID>
        				<String><Key>Title</Key><Value>Mail ✓</Value></String>
        				<String><Key>UserName</Key><Value>alice</Value></String>
        				<String><Key>Password</Key><Value>mail-sécret</Value></String>
        				<String><Key>URL</Key><Value>https://mail.example.org</Value></String>
        				<String><Key>Notes</Key><Value>a note</Value></String>
        			</Entry>
        			<Entry>
        				<UUID>AAAAAAAAAAAAAAAAAAAAAg==</UUID>
        				<String><Key>Title</Key><Value>VPN</Value></String>
        				<String><Key>UserName</Key><Value>bob</Value></String>
        				<String><Key>Password</Key><Value>vpn-pw</Value></String>
        			</Entry>
        		</Group>
        		<DeletedObjects/>
        	</Root>
        </KeePassFile>
        """#

    /// KeePassXC's own D-Bus name and interface (its main window: open, lock, quit).
    static let keepassxcWindow = "org.keepassxc.KeePassXC.MainWindow"

    @Test("a running KeePassXC (headless, its Secret Service on): its database's entries go into secretd's login keyring, whole")
    func importsFromRunningKeePassXC() throws {
        let fixture = try SecretdFixture()
        let database = fixture.root.appendingPathComponent("db.kdbx")
        let xml = fixture.root.appendingPathComponent("db.xml")
        try Self.keepassXML.write(to: xml, atomically: true, encoding: .utf8)
        let created = try fixture.run(["keepassxc-cli", "import", "-q", "-p", xml.path, database.path], input: "kp-pw\nkp-pw\n")
        try #require(created.status == 0, "keepassxc-cli import: \(created.errorOutput)")
        // The benchmark's settings: the Secret Service on, no dialog that would wait for a person.
        // A copy: KeePassXC writes its settings back (Secret Service off for good, in the
        // checkout, when another provider held the name at its start).
        let settings = fixture.root.appendingPathComponent("keepassxc.ini")
        try FileManager.default.copyItem(
            at: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("bench/keepassxc/keepassxc.ini"), to: settings)
        var environment = fixture.environment
        environment["QT_QPA_PLATFORM"] = "offscreen"
        let keepassxc = try SupervisedProcess(
            ["keepassxc", "--config", settings.path, "--localconfig", fixture.root.appendingPathComponent("local.ini").path],
            environment: environment, logURL: fixture.root.appendingPathComponent("keepassxc.log"))
        defer { keepassxc.stop() }
        // The database opened with its password through KeePassXC's own D-Bus interface, as a
        // script of the person's would. Not `keepassxc --pw-stdin FILE`: KeePassXC 2.7.10 (Debian
        // 13) ends with SIGSEGV right after that unlock, offscreen or under Xvfb alike, in
        // QWidgetPrivate::showChildren from main (KeePassXC issues 9799 and 13521); 2.7.4
        // (Debian 12) does not. This way is the same on both.
        try fixture.control.waitForOwner(of: Self.keepassxcWindow, startedBy: keepassxc)
        _ = try fixture.control.call("/keepassxc", Self.keepassxcWindow, "openDatabase", "('\(database.path)', 'kp-pw')",
                                     destination: Self.keepassxcWindow)
        try fixture.control.waitForOwner(of: TestEnvironment.busName, startedBy: keepassxc)
        let opened = ClientFaultTests.wait(60) {
            (try? fixture.call("/org/freedesktop/secrets", "org.freedesktop.DBus.Properties", "Get",
                               "('org.freedesktop.Secret.Service', 'Collections')"))?.contains("/collection/db") == true
        }
        try #require(opened, "KeePassXC did not show the opened database as a collection: \(keepassxc.log)")

        // KeePassXC shows its open database as locked until a client unlocks it (no prompt: it
        // is open); secretstorage's unlock waits for a prompt that never ends, libsecret's not.
        let unlocked = try fixture.run(["secret-tool", "search", "--unlock", "UserName", "bob"])
        try #require(unlocked.status == 0, "\(unlocked.errorOutput) \(keepassxc.log)")
        let source = try Self.keyrings(fixture)
        let entries = try #require(source["db"]?["items"] as? [[String: Any]], "\(source.keys) \(keepassxc.log)")
        #expect(entries.count == 2)
        let first = try fixture.run([Self.secretctl, "import", "secret-service", "--password-stdin"], input: "secretd-pw\n")
        #expect(first.status == 0 && first.text == "db (into login): imported 2, skipped 0, failed 0\n", "\(first.text) \(first.errorOutput)")
        let again = try fixture.run([Self.secretctl, "import", "secret-service", "--password-stdin"], input: "secretd-pw\n")
        #expect(again.text == "db (into login): imported 0, skipped 2, failed 0\n", "\(again.errorOutput)")
        keepassxc.stop()
        try fixture.waitUntilNameIsFree()

        let secretd = try fixture.start(
            ["--unlock", "--data-dir", fixture.root.appendingPathComponent(".local/share/secretd").path], input: "secretd-pw")
        defer { secretd.stop() }
        let imported = try Self.keyrings(fixture)
        #expect(
            try JSONSerialization.data(withJSONObject: imported["login"]?["items"] ?? [], options: .sortedKeys)
                == JSONSerialization.data(withJSONObject: entries, options: .sortedKeys),
            "\(imported["login"]?["items"] ?? []) against \(entries)")
        #expect(try fixture.run(["secret-tool", "lookup", "UserName", "bob"]).text == "vpn-pw")
    }

    @Test("no provider, secretd itself, a bad --from, no password: clear errors and nothing started")
    func refusals() throws {
        let fixture = try SecretdFixture()
        let nobody = try fixture.run([Self.secretctl, "import", "secret-service", "--password-stdin"], input: "pw\n")
        #expect(nobody.status == 5 && nobody.errorOutput.contains("nothing owns org.freedesktop.secrets"), "\(nobody.errorOutput)")
        let badName = try fixture.run([Self.secretctl, "import", "secret-service", "--from", "not a name"])
        #expect(badName.status == 2 && badName.errorOutput.contains("--from"), "\(badName.errorOutput)")
        let stray = try fixture.run([Self.secretctl, "import", "some.csv", "--from", "org.example.Keyring"])
        #expect(stray.status == 2 && stray.errorOutput.contains("secret-service only"), "\(stray.errorOutput)")

        let gnomeKeyring = try Self.startGnomeKeyring(fixture)
        let noPassword = try fixture.run([Self.secretctl, "import", "secret-service"], input: "")
        #expect(noPassword.status == 2 && noPassword.errorOutput.contains("--password-stdin"), "\(noPassword.errorOutput)")
        gnomeKeyring.stop()
        try fixture.waitUntilNameIsFree()

        let daemon = try fixture.start()
        defer { daemon.stop() }
        let itself = try fixture.run([Self.secretctl, "import", "secret-service", "--password-stdin"], input: "pw\n")
        #expect(itself.status == 2 && itself.errorOutput.contains("secretd itself owns"), "\(itself.errorOutput)")
        let beside = try fixture.run([Self.secretctl, "import", "secret-service", "--from", "org.example.Keyring", "--password-stdin"], input: "pw\n")
        #expect(beside.status == 2 && beside.errorOutput.contains("stop it first"), "\(beside.errorOutput)")
        // No secretd was left behind under a name of its own.
        let names = try fixture.control.call("/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames", "()", destination: "org.freedesktop.DBus")
        #expect(!names.contains("io.github.secretd.Side"), "\(names)")
    }
}
