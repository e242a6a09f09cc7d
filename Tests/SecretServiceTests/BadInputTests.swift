import Foundation
import KeychainTestSupport
import Testing

@testable import SecretStore

/// The bad-input matrix of secretd, one table per kind of input: each row is one bad request or
/// one damaged file, and the answer it must get (a D-Bus error with a clear name, or one log
/// line and a refusal to start). After a bad call the daemon keeps serving and every item is
/// as it was; after a refused start the file is as it was.
@Suite struct BadInputTests: SecretServiceCalls {

    // MARK: - Bad calls

    /// What a bad call is made against: the daemon's state when the row runs.
    struct Setup: Sendable {
        /// A plain session of the calling connection.
        var session: String
        /// A plain session of another connection.
        var othersSession: String
        /// An item that must come through unchanged.
        var item: String
    }

    /// One row: a call that must fail with `error`.
    struct BadCall: Sendable, CustomTestStringConvertible {
        /// What is wrong with the call.
        var name: String
        /// Lock the login keyring before the call.
        var whileLocked = false
        /// Makes the call and returns its reply (the row fails if there is one).
        var call: @Sendable (SecretdFixture, Setup) throws -> String
        /// The D-Bus error name the call must get.
        var error: String
        /// Words the error message must contain, if any.
        var message = ""

        var testDescription: String { name }
    }

    /// A `CreateItem` call on the login keyring with `properties` (GVariant text of an `a{sv}`).
    static func createItem(_ properties: String, secret: String? = nil) -> @Sendable (SecretdFixture, Setup) throws -> String {
        { fixture, setup in
            try fixture.call(login, collectionInterface, "CreateItem", "(\(properties), \(secret ?? Self.secret(setup.session)), false)")
        }
    }

    static let calls: [BadCall] = [
        BadCall(name: "an argument of the wrong type", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "SearchItems", "('not a dict',)")
        }, error: "org.freedesktop.DBus.Error.InvalidArgs"),
        BadCall(name: "one argument too many", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "SearchItems", "({'a': 'b'}, 'extra')")
        }, error: "org.freedesktop.DBus.Error.InvalidArgs"),
        BadCall(name: "an unknown method", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "Frobnicate")
        }, error: "org.freedesktop.DBus.Error.UnknownMethod"),
        BadCall(name: "an object path secretd does not export", call: { fixture, setup in
            try fixture.call("/org/freedesktop/secrets/nothing", itemInterface, "GetSecret", "(objectpath '\(setup.session)',)")
        }, error: "org.freedesktop.Secret.Error.NoSuchObject"),
        BadCall(name: "an item that does not exist", call: { fixture, setup in
            try fixture.call(login + "/99999", itemInterface, "GetSecret", "(objectpath '\(setup.session)',)")
        }, error: "org.freedesktop.Secret.Error.NoSuchObject"),
        BadCall(name: "a collection that does not exist", call: { fixture, setup in
            try fixture.call("/org/freedesktop/secrets/collection/nothing", collectionInterface, "CreateItem",
                             "(@a{sv} {}, \(secret(setup.session)), false)")
        }, error: "org.freedesktop.Secret.Error.NoSuchObject"),
        BadCall(name: "an unknown session algorithm", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "OpenSession", "('rot13', <''>)")
        }, error: "org.freedesktop.DBus.Error.NotSupported"),
        BadCall(name: "a DH public key out of range", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "OpenSession", "('dh-ietf1024-sha256-aes128-cbc-pkcs7', <@ay [0]>)")
        }, error: "org.freedesktop.DBus.Error.InvalidArgs", message: "out of range"),
        BadCall(name: "a DH public key that is not bytes", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "OpenSession", "('dh-ietf1024-sha256-aes128-cbc-pkcs7', <'key'>)")
        }, error: "org.freedesktop.DBus.Error.InvalidArgs"),
        BadCall(name: "a bogus session path", call: { fixture, setup in
            try fixture.call(setup.item, itemInterface, "GetSecret", "(objectpath '/org/freedesktop/secrets/session/s999',)")
        }, error: "org.freedesktop.Secret.Error.NoSession"),
        BadCall(name: "another client's session", call: { fixture, setup in
            try fixture.call(setup.item, itemInterface, "GetSecret", "(objectpath '\(setup.othersSession)',)")
        }, error: "org.freedesktop.Secret.Error.NoSession"),
        BadCall(name: "a secret that is not a (oayays) struct", call: { fixture, setup in
            try fixture.call(setup.item, itemInterface, "SetSecret", "((objectpath '\(setup.session)', @ay [], 'bytes', 'text/plain'),)")
        }, error: "org.freedesktop.DBus.Error.InvalidArgs"),
        BadCall(name: "a read-only property set", call: { fixture, _ in
            try fixture.call(login, properties, "Set", "('\(collectionInterface)', 'Locked', <true>)")
        }, error: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "cannot be written"),
        BadCall(name: "a label property of the wrong type", call: { fixture, setup in
            try fixture.call(setup.item, properties, "Set", "('\(itemInterface)', 'Label', <42>)")
        }, error: "org.freedesktop.DBus.Error.InvalidArgs"),
        BadCall(name: "a label of bytes with invalid UTF-8 and NUL",
                call: createItem("{'org.freedesktop.Secret.Item.Label': <@ay [0xff, 0x00, 0x41]>}"),
                error: "org.freedesktop.DBus.Error.InvalidArgs", message: "Label must be a string"),
        BadCall(name: "attributes that are not a{ss}",
                call: createItem("{'org.freedesktop.Secret.Item.Attributes': <{'n': <1>}>}"),
                error: "org.freedesktop.DBus.Error.InvalidArgs", message: "Attributes must be a{ss}"),
        BadCall(name: "10,000 attributes",
                call: createItem("{'org.freedesktop.Secret.Item.Attributes': <{"
                                 + (0..<10_000).map { "'a\($0)': 'v'" }.joined(separator: ", ") + "}>}"),
                error: "org.freedesktop.DBus.Error.InvalidArgs", message: "at most"),
        BadCall(name: "a label over 64 KiB",
                call: createItem("{'org.freedesktop.Secret.Item.Label': <'\(String(repeating: "l", count: 70_000))'>}"),
                error: "org.freedesktop.DBus.Error.InvalidArgs", message: "longer than"),
        BadCall(name: "a secret of 16 MiB", call: { fixture, setup in
            try fixture.control.createItem(in: login, session: setup.session, attributes: ["huge": "yes"],
                                           secret: [UInt8](repeating: 0x78, count: 16 * 1024 * 1024))
        }, error: "org.freedesktop.DBus.Error.InvalidArgs", message: "larger than"),
        BadCall(name: "a content type that is not a string",
                call: { fixture, setup in
                    try fixture.call(setup.item, itemInterface, "SetSecret", "(\(secret(setup.session, contentType: "<42>")),)")
                }, error: "org.freedesktop.DBus.Error.InvalidArgs"),
        BadCall(name: "a collection label of the wrong type", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "CreateCollection",
                             "({'org.freedesktop.Secret.Collection.Label': <42>}, '')")
        }, error: "org.freedesktop.DBus.Error.InvalidArgs", message: "Label must be a string"),
        BadCall(name: "an alias that cannot be set", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "SetAlias", "('', objectpath '\(login)')")
        }, error: "org.freedesktop.DBus.Error.InvalidArgs"),
        BadCall(name: "an alias whose path would pass sd-bus's 64 KiB", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "SetAlias", "('\(String(repeating: "x", count: 65_536))', objectpath '\(login)')")
        }, error: "org.freedesktop.DBus.Error.InvalidArgs", message: "1 to 64 ASCII letters"),
        BadCall(name: "an alias that is no path element", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "SetAlias", "('my keys', objectpath '\(login)')")
        }, error: "org.freedesktop.DBus.Error.InvalidArgs", message: "1 to 64 ASCII letters"),
        BadCall(name: "a new collection under an alias of 65 characters", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "CreateCollection", "(@a{sv} {}, '\(String(repeating: "a", count: 65))')")
        }, error: "org.freedesktop.DBus.Error.InvalidArgs", message: "1 to 64 ASCII letters"),
        BadCall(name: "an alias to a collection that does not exist", call: { fixture, _ in
            try fixture.call(service, serviceInterface, "SetAlias", "('work', objectpath '/nope')")
        }, error: "org.freedesktop.Secret.Error.NoSuchObject"),
        BadCall(name: "a secret read from a locked keyring", whileLocked: true, call: { fixture, setup in
            try fixture.call(setup.item, itemInterface, "GetSecret", "(objectpath '\(setup.session)',)")
        }, error: "org.freedesktop.Secret.Error.IsLocked"),
        BadCall(name: "a secret written to a locked keyring", whileLocked: true, call: { fixture, setup in
            try fixture.call(setup.item, itemInterface, "SetSecret", "(\(secret(setup.session, "changed")),)")
        }, error: "org.freedesktop.Secret.Error.IsLocked"),
        BadCall(name: "a label written to a locked keyring", whileLocked: true, call: { fixture, setup in
            try fixture.call(setup.item, properties, "Set", "('\(itemInterface)', 'Label', <'changed'>)")
        }, error: "org.freedesktop.Secret.Error.IsLocked"),
        BadCall(name: "an item created in a locked keyring", whileLocked: true,
                call: createItem("{'org.freedesktop.Secret.Item.Label': <'new'>}"),
                error: "org.freedesktop.Secret.Error.IsLocked"),
    ]

    @Test("a bad call gets a named D-Bus error; the daemon keeps serving and no item changes", arguments: calls)
    func badCall(_ row: BadCall) throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        let session = try openPlainSession(fixture.control)
        let other = try BusConnection(address: fixture.bus.address)
        let item = try fixture.call(Self.login, Self.collectionInterface, "CreateItem",
                                    "({'org.freedesktop.Secret.Item.Label': <'Kept'>, 'org.freedesktop.Secret.Item.Attributes': <{'keep': 'me'}>}, \(Self.secret(session, "kept")), false)")
        let setup = Setup(session: session, othersSession: try openPlainSession(other), item: try #require(objectPaths(in: item).first))
        _ = try fixture.call(Self.login, Self.collectionInterface, "CreateItem",
                             "({'org.freedesktop.Secret.Item.Label': <'Second'>, 'org.freedesktop.Secret.Item.Attributes': <{'n': '2'}>}, \(Self.secret(session, "second")), false)")
        let before = try snapshot(fixture, session: session)
        if row.whileLocked { try fixture.control.lock([Self.login]) }

        do {
            let reply = try row.call(fixture, setup)
            Issue.record("\(row.name): accepted with \(reply.prefix(200))")
        } catch {
            let text = "\(error)"
            #expect(text.hasPrefix(row.error + ":"), "\(row.name): \(text.prefix(300))")
            #expect(row.message.isEmpty || text.contains(row.message), "\(row.name): \(text.prefix(300))")
        }

        #expect(daemon.isRunning)
        if row.whileLocked { try fixture.control.unlock(Self.login, password: "login-password") }
        #expect(try snapshot(fixture, session: session) == before, "\(row.name) changed the items")
        // And it still takes a good write.
        _ = try fixture.call(Self.login, Self.collectionInterface, "CreateItem",
                             "({'org.freedesktop.Secret.Item.Attributes': <{'after': 'yes'}>}, \(Self.secret(session)), false)")
        daemon.stop()
    }

    // MARK: - Damaged files

    /// One row: a change to secretd's files made while it is stopped, and the one line it must
    /// print when it then refuses to start, or, for its database, to serve its keyrings.
    struct DamagedFile: Sendable, CustomTestStringConvertible {
        /// What is wrong with the file.
        var name: String
        /// Damages the files of a stopped daemon; returns the file that must stay as it is.
        var damage: @Sendable (SecretdFixture) throws -> URL
        /// What the one log line starts with or contains.
        var line: String
        /// Whether secretd keeps its bus name and refuses every call (a database it cannot
        /// use: RefusedDatabaseTests) rather than exit 1.
        var refusedToClients = true

        var testDescription: String { name }
    }

    static func database(_ fixture: SecretdFixture) -> URL { fixture.dataDirectory.appendingPathComponent("secretd.sqlite3") }

    static let files: [DamagedFile] = [
        DamagedFile(name: "a file that is not a database", damage: { fixture in
            let file = database(fixture)
            try Data("this is not a database".utf8).write(to: file)
            return file
        }, line: "is damaged ("),
        DamagedFile(name: "a truncated database", damage: { fixture in
            let file = database(fixture)
            let data = try Data(contentsOf: file)
            try data.prefix(data.count / 3).write(to: file)
            return file
        }, line: "is damaged ("),
        DamagedFile(name: "a database with overwritten pages", damage: { fixture in
            let file = database(fixture)
            var data = try Data(contentsOf: file)
            for offset in stride(from: 4096, to: data.count, by: 4096) {
                data.replaceSubrange(offset..<min(offset + 512, data.count), with: Data(repeating: 0xA5, count: min(512, data.count - offset)))
            }
            try data.write(to: file)
            return file
        }, line: "is damaged ("),
        DamagedFile(name: "another program's SQLite database", damage: { fixture in
            let file = database(fixture)
            try FileManager.default.removeItem(at: file)
            let foreign = try Database(path: file.path)
            try foreign.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('mine')")
            return file
        }, line: "is damaged ("),
        DamagedFile(name: "a database from a newer secretd", damage: { fixture in
            let file = database(fixture)
            try Database(path: file.path).execute("PRAGMA user_version = 99")
            return file
        }, line: "was written by a newer secretd (schema version 99; this secretd reads versions up to"),
        DamagedFile(name: "a malformed secretd.conf", damage: { fixture in
            try fixture.writeConfiguration("[pinentry\nprogram = /bin/true\n")
            return fixture.configDirectory.appendingPathComponent("secretd.conf")
        }, line: "secretd: bad configuration: ", refusedToClients: false),
    ]

    @Test("a damaged file stops the start (the database: its use) with one clear line and is left as it was", arguments: files)
    func damagedFile(_ row: DamagedFile) throws {
        let fixture = try SecretdFixture()
        let first = try fixture.start()
        let session = try openPlainSession(fixture.control)
        for index in 0..<40 {  // a database of a few pages
            _ = try fixture.control.createItem(in: Self.login, session: session, attributes: ["n": "\(index)"],
                                               secret: [UInt8](repeating: 0x61, count: 300))
        }
        first.stop()
        try fixture.waitUntilNameIsFree()
        try checkpoint(fixture)
        let file = try row.damage(fixture)
        let before = try Data(contentsOf: file)

        guard row.refusedToClients else {
            let daemon = try fixture.start(waitForName: false)
            #expect(daemon.waitForExit(timeout: 20) == 1, "\(row.name)")
            let lines = daemon.log.split(separator: "\n")
            #expect(lines.count == 1, "\(row.name): \(daemon.log)")
            #expect(lines.first?.contains(row.line) == true, "\(row.name): \(daemon.log)")
            #expect(try Data(contentsOf: file) == before, "\(row.name): the file was changed")
            #expect(try !fixture.control.nameHasOwner(TestEnvironment.busName))
            return
        }
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let lines = daemon.log.split(separator: "\n")
        #expect(lines.first?.hasPrefix("<3>secretd: the keyring database \(file.path)") == true, "\(row.name): \(daemon.log)")
        #expect(lines.first?.contains(row.line) == true, "\(row.name): \(daemon.log)")
        do {
            let reply = try fixture.call(Self.login, Self.collectionInterface, "SearchItems", "({'n': '1'},)")
            Issue.record("\(row.name): SearchItems answered \(reply)")
        } catch {
            #expect("\(error)".hasPrefix("io.github.secretd.Error.UnusableDatabase:"), "\(row.name): \(error)")
        }
        daemon.stop()
        #expect(try Data(contentsOf: file) == before, "\(row.name): the file was changed")
    }

    // MARK: - Damaged items

    @Test("a sealed item altered, or moved onto another row, fails alone with a clear error")
    func damagedItems() throws {
        let fixture = try SecretdFixture()
        var daemon = try fixture.start()
        var session = try openPlainSession(fixture.control)
        var paths: [String] = []
        for name in ["altered", "moved", "intact"] {
            let reply = try fixture.call(Self.login, Self.collectionInterface, "CreateItem",
                                         "({'org.freedesktop.Secret.Item.Attributes': <{'name': '\(name)'}>}, \(Self.secret(session, name)), false)")
            paths.append(try #require(objectPaths(in: reply).first))
        }
        daemon.stop()
        try fixture.waitUntilNameIsFree()
        let database = try Database(path: Self.database(fixture).path)
        let ids = paths.map { Int64($0.split(separator: "/").last!)! }
        var sealed = try #require(try database.rows("SELECT sealed FROM items WHERE id = ?", [.integer(ids[0])]).first?.first?.blob)
        sealed[sealed.count / 2] ^= 0x01
        try database.run("UPDATE items SET sealed = ? WHERE id = ?", [.blob(sealed), .integer(ids[0])])
        try database.run("UPDATE items SET sealed = (SELECT sealed FROM items WHERE id = ?) WHERE id = ?",
                         [.integer(ids[2]), .integer(ids[1])])

        daemon = try fixture.start()
        session = try openPlainSession(fixture.control)
        for path in paths.prefix(2) {
            do {
                _ = try fixture.call(path, Self.itemInterface, "GetSecret", "(objectpath '\(session)',)")
                Issue.record("a damaged item opened: \(path)")
            } catch {
                #expect("\(error)".hasPrefix("org.freedesktop.DBus.Error.Failed:"), "\(error)")
                #expect("\(error)".contains("damaged"), "\(error)")
            }
        }
        let intact = try fixture.call(paths[2], Self.itemInterface, "GetSecret", "(objectpath '\(session)',)")
        #expect(intact.contains("[byte 0x69, 0x6e, 0x74, 0x61, 0x63, 0x74]"), "\(intact)")
        #expect(try fixture.run(["secret-tool", "lookup", "name", "intact"]).text == "intact")
        #expect(daemon.isRunning)
        daemon.stop()
    }

    // MARK: - A full disk

    // MARK: - A machine without a machine id

    @Test("Peer.GetMachineId where /etc/machine-id is empty (a fresh chroot or container) gets an error; secretd keeps serving",
          .enabled(if: getuid() == 0, "needs root to mount over /etc/machine-id in a private mount namespace"))
    func noMachineID() throws {
        let fixture = try SecretdFixture()
        let empty = fixture.root.appendingPathComponent("machine-id")
        #expect(FileManager.default.createFile(atPath: empty.path, contents: Data()))
        // The empty machine id exists only in secretd's own mount namespace.
        let script = "mount --bind '\(empty.path)' /etc/machine-id && exec \"$0\" \"$@\""
        let daemon = try SupervisedProcess(
            ["unshare", "-m", "sh", "-c", script, SecretdFixture.secretdPath, "--foreground", "--unlock",
             "--data-dir", fixture.dataDirectory.path, "--config-dir", fixture.configDirectory.path],
            environment: fixture.environment, standardInput: Data("login-password".utf8),
            logURL: fixture.root.appendingPathComponent("machine-id.log"))
        defer { daemon.stop() }
        try fixture.control.waitForOwner(of: TestEnvironment.busName, startedBy: daemon)
        #expect(refusal { try fixture.call(Self.service, "org.freedesktop.DBus.Peer", "GetMachineId") } == "org.freedesktop.DBus.Error.Failed")
        #expect(daemon.isRunning, "\(daemon.log)")
        #expect(try fixture.call(Self.service, Self.serviceInterface, "ReadAlias", "('default',)") == "(objectpath '\(Self.login)',)")
    }

    // MARK: - A full disk

    @Test("a full disk: writes fail with a clear error and nothing half-written, reads go on, and writing works again when space returns",
          .enabled(if: getuid() == 0, "needs root to mount a small tmpfs in a private mount namespace"))
    func fullDisk() throws {
        let fixture = try SecretdFixture()
        // The database on a 3 MiB tmpfs.
        let daemon = try startOnOwnMount(fixture, "mount -t tmpfs -o size=3m,mode=0700 tmpfs \"$1\"", log: "disk-full.log")
        defer { daemon.stop() }
        let pid = try #require(daemon.helperPID)
        #expect(try fixture.run(["secret-tool", "store", "--label=before", "service", "s", "account", "before"], input: "kept ✓").status == 0)
        // A filler file takes 1 MiB of it, to be removed later.
        let filler = fixture.dataDirectory.appendingPathComponent("filler").path
        let filled = try CommandResult.run(
            ["nsenter", "-t", String(pid), "-m", "dd", "if=/dev/zero", "of=\(filler)", "bs=1M", "count=1"], environment: fixture.environment,
            scratch: fixture.root)
        try #require(filled.status == 0, "\(filled.errorOutput)")

        // 400 KB secrets until the disk is full: each write is stored whole or refused whole.
        let fill = try fixture.runPython(#"""
            import hashlib, secretstorage
            c = secretstorage.get_default_collection(secretstorage.dbus_init())
            stored, errors = [], set()
            for i in range(12):
                secret = hashlib.sha256(str(i).encode()).digest() * 12500
                try:
                    c.create_item(f"big{i}", {"service": "big", "account": str(i)}, secret)
                    stored.append(i)
                except Exception as e:
                    errors.add(str(e))
            found = sorted(int(x.get_attributes()["account"]) for x in c.search_items({"service": "big"}))
            whole = all(x.get_secret() == hashlib.sha256(x.get_attributes()["account"].encode()).digest() * 12500
                        for x in c.search_items({"service": "big"}))
            print(stored == found and whole, len(stored), sorted(errors))
            """#, named: "fill.py")
        #expect(fill.status == 0, "\(fill.errorOutput)")
        #expect(fill.text.hasPrefix("True "), "\(fill.text)")
        #expect(fill.text.contains("database is full: nothing was written; free some space and try again"), "\(fill.text)")
        #expect(!fill.text.hasPrefix("True 12 "), "the disk never filled up")
        // Reads go on; the log says why the writes failed.
        #expect(try fixture.run(["secret-tool", "lookup", "service", "s", "account", "before"]).text == "kept ✓")
        #expect(daemon.log.contains("disk full"))

        // What space the big ones left, a second filler takes.
        _ = try CommandResult.run(
            ["nsenter", "-t", String(pid), "-m", "dd", "if=/dev/zero", "of=\(filler)-rest", "bs=4k"], environment: fixture.environment,
            scratch: fixture.root)
        // A 400 KB secret (one more of the fill's) does not fit: refused whole.
        let storeBig = #"""
            import hashlib, secretstorage
            c = secretstorage.get_default_collection(secretstorage.dbus_init())
            secret = hashlib.sha256(b"big").digest() * 12500
            try:
                c.create_item("big", {"service": "s", "account": "big"}, secret)
            except Exception as e:
                print("refused:", e)
            print("found", [x.get_secret() == secret for x in c.search_items({"service": "s", "account": "big"})])
            """#
        let refused = try fixture.runPython(storeBig, named: "big.py")
        #expect(refused.text.contains("refused: [org.freedesktop.DBus.Error.Failed] (\"the disk holding secretd's database is full: nothing was written") && refused.text.hasSuffix("found []\n"), "\(refused.text) \(refused.errorOutput)")
        #expect(try fixture.run(["secret-tool", "lookup", "service", "s", "account", "before"]).text == "kept ✓")
        // Space returns (the fillers go): writes work again with no restart, and everything is there.
        let freed = try CommandResult.run(["nsenter", "-t", String(pid), "-m", "rm", filler, filler + "-rest"], environment: fixture.environment, scratch: fixture.root)
        try #require(freed.status == 0, "\(freed.errorOutput)")
        let stored = try fixture.runPython(storeBig, named: "big.py")
        #expect(stored.text == "found [True]\n", "\(stored.text) \(stored.errorOutput)")
        #expect(try fixture.run(["secret-tool", "store", "--label=after", "service", "s", "account", "after"], input: "new").status == 0)
        #expect(try fixture.run(["secret-tool", "lookup", "service", "s", "account", "after"]).text == "new")
        #expect(try fixture.run(["secret-tool", "lookup", "service", "s", "account", "before"]).text == "kept ✓")
        #expect(daemon.isRunning, "\(daemon.log)")
        // The file was never damaged (checked beside secretd, read-only).
        let integrity = try CommandResult.run(
            ["nsenter", "-t", String(pid), "-m", "sqlite3", "-readonly", Self.database(fixture).path, "PRAGMA integrity_check"],
            environment: fixture.environment, scratch: fixture.root)
        #expect(integrity.text.trimmingCharacters(in: .whitespacesAndNewlines) == "ok", "\(integrity.text) \(integrity.errorOutput)")
    }

    // MARK: - A read-only file system

    @Test("a file system made read-only under secretd: writes fail with a clear error, reads go on, nothing stored is damaged, and all of it is there after fsck and a restart",
          .enabled(if: getuid() == 0, "needs root to mount a loop ext4 file system in a private mount namespace"))
    func readOnlyFileSystem() throws {
        let fixture = try SecretdFixture()
        let image = fixture.root.appendingPathComponent("data.ext4")
        try #require(try fixture.run(["truncate", "-s", "16M", image.path]).status == 0)
        try #require(try fixture.run(["/usr/sbin/mkfs.ext4", "-q", image.path]).status == 0)
        // The database on a loop ext4 file system that the kernel makes read-only when it finds an error.
        let mount = "mount -o loop,errors=remount-ro '\(image.path)' \"$1\""
        var daemon = try startOnOwnMount(fixture, mount, log: "read-only.log")
        defer { daemon.stop() }
        let pid = try #require(daemon.helperPID)
        let secrets = (0..<5).map { "secret \($0) ✓ \(String(repeating: "x", count: $0 * 300))" }
        for (index, secret) in secrets.enumerated() {
            try #require(try fixture.run(["secret-tool", "store", "--label=kept \(index)", "service", "ro", "account", "\(index)"], input: secret).status == 0)
        }
        func inNamespace(_ arguments: [String]) throws -> CommandResult {
            try CommandResult.run(["nsenter", "-t", String(pid), "-m"] + arguments, environment: fixture.environment, scratch: fixture.root)
        }
        // A plain `mount -o remount,ro` cannot happen under secretd: the kernel refuses it while
        // files are open for writing. What does happen is the kernel's own: an ext4 error
        // makes it read-only at once (errors=remount-ro), with secretd's files open.
        #expect(try inNamespace(["mount", "-o", "remount,ro", fixture.dataDirectory.path]).status != 0)
        let device = try inNamespace(["findmnt", "-no", "SOURCE", fixture.dataDirectory.path]).text.trimmingCharacters(in: .whitespacesAndNewlines)
        let loop = try #require(device.split(separator: "/").last.map(String.init), "\(device)")
        try "1".write(toFile: "/sys/fs/ext4/\(loop)/trigger_fs_error", atomically: false, encoding: .utf8)

        // Writes (store, replace, delete) fail with the reason, and nothing of them lands.
        let refused = "the file system holding secretd's database is read-only: nothing was written"
        let store = try fixture.run(["secret-tool", "store", "--label=new", "service", "ro", "account", "new"], input: "lost")
        #expect(store.status != 0 && store.errorOutput.contains(refused), "\(store.errorOutput)")
        let replace = try fixture.run(["secret-tool", "store", "--label=kept 0", "service", "ro", "account", "0"], input: "replaced")
        #expect(replace.status != 0 && replace.errorOutput.contains(refused), "\(replace.errorOutput)")
        let clear = try fixture.run(["secret-tool", "clear", "service", "ro", "account", "1"])
        #expect(clear.status != 0 && clear.errorOutput.contains(refused), "\(clear.errorOutput)")
        // Reads go on, with every item as it was.
        for (index, secret) in secrets.enumerated() {
            #expect(try fixture.run(["secret-tool", "lookup", "service", "ro", "account", "\(index)"]).text == secret)
        }
        #expect(try fixture.run(["secret-tool", "lookup", "service", "ro", "account", "new"]).status != 0)
        #expect(daemon.isRunning, "\(daemon.log)")
        #expect(daemon.log.contains("read-only file system"), "\(daemon.log)")
        #expect(!daemon.log.contains("lost") && !daemon.log.contains("replaced"))

        // Such a file system comes back only through unmount and fsck (the kernel refuses to
        // make it writable again while it is mounted), so secretd stops; then every item is there.
        daemon.stop()
        #expect(daemon.waitForExit(timeout: 10) != nil)
        let fsck = try fixture.run(["/usr/sbin/e2fsck", "-fy", image.path])
        #expect(fsck.status == 0 || fsck.status == 1, "\(fsck.text) \(fsck.errorOutput)")
        let file = Self.database(fixture).path
        let integrity = try fixture.run(["unshare", "-m", "sh", "-c", "mount -o loop '\(image.path)' \"$0\" && sqlite3 \"$1\" 'PRAGMA integrity_check'", fixture.dataDirectory.path, file])
        #expect(integrity.text.trimmingCharacters(in: .whitespacesAndNewlines) == "ok", "\(integrity.text) \(integrity.errorOutput)")
        daemon = try startOnOwnMount(fixture, mount, log: "read-only-after.log")
        for (index, secret) in secrets.enumerated() {
            #expect(try fixture.run(["secret-tool", "lookup", "service", "ro", "account", "\(index)"]).text == secret)
        }
        #expect(try fixture.run(["secret-tool", "search", "--all", "service", "ro"]).text.split(separator: "\n").filter { $0.hasPrefix("[/") }.count == secrets.count)
        #expect(try fixture.run(["secret-tool", "store", "--label=new", "service", "ro", "account", "new"], input: "written").status == 0)
        #expect(try fixture.run(["secret-tool", "lookup", "service", "ro", "account", "new"]).text == "written")
    }

    // MARK: - Helpers

    /// Starts secretd (unlocking the login keyring) with its data directory on a file system
    /// that `mount` (a shell command; `$1` is the data directory) mounts in secretd's own mount
    /// namespace, and waits until it owns the name.
    func startOnOwnMount(_ fixture: SecretdFixture, _ mount: String, log: String) throws -> SupervisedProcess {
        try FileManager.default.createDirectory(at: fixture.dataDirectory, withIntermediateDirectories: true)
        let daemon = try SupervisedProcess(
            ["unshare", "-m", "sh", "-c", "\(mount) && shift && exec \"$0\" \"$@\"", SecretdFixture.secretdPath, fixture.dataDirectory.path,
             "--foreground", "--unlock", "--data-dir", fixture.dataDirectory.path, "--config-dir", fixture.configDirectory.path],
            environment: fixture.environment, standardInput: Data("login-password".utf8), logURL: fixture.root.appendingPathComponent(log))
        try fixture.control.waitForOwner(of: TestEnvironment.busName, startedBy: daemon)
        return daemon
    }


    /// Moves everything from the write-ahead log into the database file and removes the log,
    /// so that damage to the file is damage to the data (secretd leaves the log in place).
    func checkpoint(_ fixture: SecretdFixture) throws {
        let file = Self.database(fixture).path
        do {
            let database = try Database(path: file)
            _ = try database.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
    }

    /// Every item's path, label, attributes and secret, in path order.
    func snapshot(_ fixture: SecretdFixture, session: String) throws -> [String] {
        let found = try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "(@a{ss} {},)")
        return try objectPaths(in: found).sorted().map { path in
            let secret = try fixture.call(path, Self.itemInterface, "GetSecret", "(objectpath '\(session)',)")
            let label = try fixture.call(path, Self.properties, "Get", "('\(Self.itemInterface)', 'Label')")
            let attributes = try fixture.call(path, Self.properties, "Get", "('\(Self.itemInterface)', 'Attributes')")
            return [path, label, attributes, secret].joined(separator: " ")
        }
    }
}
