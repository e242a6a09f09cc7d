import DBusValues
import Foundation
import KeychainCore
@testable import SecretService
@testable import SecretStore
import SecretCrypto
import Testing

/// Maintenance1's `Restore` and the automatic backups in this process, through the shared
/// ``TestKeyring`` (a manual clock: time moves by hand, nothing sleeps).
@Suite struct RestoreTests {
    typealias Names = SecretServiceNames

    /// Has the test keyring write a backup at `name` in its directory; the backup's path.
    static func backup(_ keyring: TestKeyring, _ name: String = "backup.sqlite3") throws -> String {
        let path = keyring.directory.appendingPathComponent(name).path
        _ = try keyring.call(TestKeyring.service, Names.Interface.maintenance, "Backup", [.string(path), .boolean(false)]).get()
        return path
    }

    /// Calls `Restore` with `path`.
    static func restore(_ keyring: TestKeyring, _ path: String) -> Result<DBusValue, SecretServiceError> {
        keyring.call(TestKeyring.service, Names.Interface.maintenance, "Restore", [.string(path)])
    }

    /// The files beside the database that keep the data a restore replaced.
    static func previousCopies(_ keyring: TestKeyring) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: keyring.directory.path).filter { $0.contains(".before-restore-") }
    }

    /// The mode bits of the file at `path`.
    static func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    /// The item with `attributes` in the login keyring, if there is exactly one.
    static func item(_ keyring: TestKeyring, _ attributes: [String: String]) throws -> String? {
        let found = try keyring.search(attributes)
        return (found.unlocked + found.locked).first
    }

    @Test("Restore brings back the backup's items: the changed one's old secret, the deleted one back, the new one gone; every keyring locked until unlocked; the replaced data kept 0600 and verifiable")
    func roundTrip() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        var session = try keyring.openSession()
        try keyring.createItem(attributes: ["service": "mail"], secret: "mail-1", session: session)
        let chat = try keyring.createItem(attributes: ["service": "chat"], secret: "chat-1", session: session)
        let backup = try Self.backup(keyring)

        // After the backup: one secret changed, one item deleted, one created.
        try keyring.createItem(attributes: ["service": "mail"], secret: "mail-2", session: session, replace: true)
        _ = try keyring.call(chat, Names.Interface.item, "Delete").get()
        try keyring.createItem(attributes: ["service": "news"], secret: "news-1", session: session)
        #expect(try Self.item(keyring, ["service": "chat"]) == nil)
        keyring.endpoint.signals = []

        let reply = try Self.restore(keyring, backup).get()
        let fields = try #require(reply.tuple)
        #expect(fields.count == 5)
        #expect(fields[1] == .uint32(2), "both items of the backup opened with the keys held: \(fields)")
        let previous = try #require(fields[4].string)
        #expect(previous.hasPrefix(keyring.directory.appendingPathComponent("secretd.sqlite3.before-restore-").path))
        #expect(try Self.mode(previous) == 0o600)
        #expect(try Self.previousCopies(keyring).count == 1)

        // Locked now: the login keyring's Locked went out, its items are listed locked.
        let login = try #require(try keyring.daemon.keyring.collection(named: Names.loginCollection))
        #expect(keyring.daemon.keyring.isLocked(login))
        #expect(keyring.endpoint.signals.contains {
            $0.path == TestKeyring.login && $0.name == "PropertiesChanged" && $0.arguments.count > 1
                && $0.arguments[1] == .properties(["Locked": .boolean(true)])
        })
        let locked = try keyring.search(["service": "mail"])
        #expect(locked.unlocked.isEmpty && locked.locked.count == 1)
        #expect(try Self.item(keyring, ["service": "news"]) == nil)
        #expect(try Self.item(keyring, ["service": "chat"]) != nil)

        // Unlocked with its password, the old secrets read back.
        #expect(try keyring.daemon.unlockLogin(password: SecureBytes(Array("right".utf8))))
        session = try keyring.openSession()
        #expect(try keyring.secret(of: try #require(try Self.item(keyring, ["service": "mail"])), session: session) == "mail-1")
        #expect(try keyring.secret(of: try #require(try Self.item(keyring, ["service": "chat"])), session: session) == "chat-1")

        // The session keyring is a new, empty and unlocked one.
        let sessionKeyring = try #require(try keyring.daemon.keyring.collection(named: Names.sessionCollection))
        #expect(!keyring.daemon.keyring.isLocked(sessionKeyring))

        // The replaced data is a sound copy holding what was live before the restore.
        let held = try keyring.daemon.keyring.collections()
        let keys = { (copy: Store.CollectionRecord) in
            held.first { $0.id == copy.id && $0.uuid == copy.uuid }.flatMap { keyring.daemon.keyring.held($0.id) }
        }
        #expect(try Store.verifyBackup(at: previous, keys: keys).opened == 2)  // mail-2 and news-1
        let copy = try Database(path: previous, readOnly: true)
        defer { copy.close() }
        #expect(try copy.rows("SELECT count(*) FROM items i JOIN collections c ON c.id = i.collection_id WHERE c.name = 'login'")
            .first?.first?.integer == 2)

        // Restoring the kept copy undoes the restore.
        _ = try Self.restore(keyring, previous).get()
        #expect(try Self.item(keyring, ["service": "news"]) != nil)
        #expect(try Self.item(keyring, ["service": "chat"]) == nil)
        #expect(try Self.previousCopies(keyring).count == 2)
    }

    @Test("Refused backups change nothing: missing, relative, not SQLite, another program's SQLite, a damaged seal, truncated, a newer schema, the live database itself")
    func refusals() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let mail = try keyring.createItem(attributes: ["service": "mail"], secret: "kept", session: session)
        let backup = try Self.backup(keyring)
        let directory = keyring.directory
        func file(_ name: String) -> String { directory.appendingPathComponent(name).path }

        try Data("not a database at all\n".utf8).write(to: URL(fileURLWithPath: file("text.sqlite3")))
        let foreign = try Database(path: file("foreign.sqlite3"))
        try foreign.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x')")
        foreign.close()
        try FileManager.default.copyItem(atPath: backup, toPath: file("tampered.sqlite3"))
        let tampered = try Database(path: file("tampered.sqlite3"))
        let id = try #require(try tampered.rows("SELECT max(id) FROM items").first?.first?.integer)
        try tampered.run(MaintenanceObjectTests.flipByte, [.integer(id)])
        tampered.close()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: backup))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: file("truncated.sqlite3")))
        try FileManager.default.copyItem(atPath: backup, toPath: file("newer.sqlite3"))
        let newer = try Database(path: file("newer.sqlite3"))
        try newer.execute("PRAGMA user_version = \(Migrations.currentVersion + 1)")
        newer.close()

        let cases: [(path: String, says: String)] = [
            (file("missing.sqlite3"), "No such file"),
            ("backup.sqlite3", "absolute"),
            (file("text.sqlite3"), "file is not a database"),
            (file("foreign.sqlite3"), "another program"),
            (file("tampered.sqlite3"), "does not open"),
            (file("truncated.sqlite3"), "damaged"),
            (file("newer.sqlite3"), "newer secretd"),
            (file(Store.fileName), "live database itself"),
            (directory.path, "not a regular file"),
        ]
        for (path, says) in cases {
            let result = Self.restore(keyring, path)
            let message = "\(result.failure.map { "\($0)" } ?? "succeeded")"
            #expect(result.failure != nil && message.contains(says), "\(path): \(message)")
            // Still unlocked, the secret still there, no copy of the current data made.
            #expect(try keyring.secret(of: mail, session: session) == "kept", "\(path)")
            #expect(try Self.previousCopies(keyring).isEmpty, "\(path)")
        }
        #expect(try keyring.daemon.keyring.integrityProblems().isEmpty)
        #expect(try keyring.search(["service": "mail"]).unlocked == [mail])
    }

    @Test("A backup of a keyring under another password restores: the keyring comes back locked and opens with the backup's password, not the current one")
    func otherPassword() throws {
        let other = try TestKeyring(password: "backup-time password")
        defer { other.remove() }
        let otherSession = try other.openSession()
        try other.createItem(attributes: ["service": "vpn"], secret: "from the backup", session: otherSession)
        let backup = try Self.backup(other)

        let keyring = try TestKeyring(password: "current password")
        defer { keyring.remove() }
        let session = try keyring.openSession()
        try keyring.createItem(attributes: ["service": "mail"], secret: "current", session: session)
        keyring.endpoint.signals = []
        let reply = try Self.restore(keyring, backup).get()
        #expect(reply.tuple?[1] == .uint32(0) && reply.tuple?[2] == .uint32(1), "its keys are not held: not opened, \(reply)")
        // Another keyring under the name login: the old one deleted, the restored one created.
        let names = keyring.endpoint.signals.filter { $0.path == TestKeyring.service }.map(\.name)
        #expect(names.contains("CollectionDeleted") && names.contains("CollectionCreated"), "\(names)")

        #expect(try !keyring.daemon.unlockLogin(password: SecureBytes(Array("current password".utf8))))
        #expect(try keyring.daemon.unlockLogin(password: SecureBytes(Array("backup-time password".utf8))))
        let fresh = try keyring.openSession()
        #expect(try keyring.secret(of: try #require(try Self.item(keyring, ["service": "vpn"])), session: fresh) == "from the backup")
        #expect(try Self.item(keyring, ["service": "mail"]) == nil)
    }

    // MARK: - Automatic backups

    /// A test keyring whose automatic backups are every hour, two kept.
    static func hourly(keep: Int = 2) throws -> TestKeyring {
        var configuration = Configuration()
        configuration.backupInterval = 3_600
        configuration.backupKeep = keep
        return try TestKeyring(configuration: configuration)
    }

    /// The automatic backups on disk, oldest first.
    static func automatic(_ keyring: TestKeyring) -> [String] {
        let directory = keyring.daemon.automaticBackups.directory.path
        return ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("secretd-") }.sorted()
    }

    @Test("An automatic backup is taken when due (at once when there is none), not before an interval has passed, each verified and 0600 in a 0700 directory, pruned to backup-keep")
    func automaticWhenDue() throws {
        let keyring = try Self.hourly()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        try keyring.createItem(attributes: ["service": "mail"], secret: "one", session: session)
        let backups = keyring.daemon.automaticBackups

        let first = try #require(backups.takeIfDue())
        #expect(first.hasSuffix("/backups/secretd-19700112-134640.sqlite3"))  // the manual clock's 1,000,000 s, UTC
        #expect(try Self.mode(first) == 0o600)
        #expect(try Self.mode(backups.directory.path) == 0o700)
        #expect(backups.lastBackup()?.path == first && backups.lastFailure == nil)

        keyring.clock.now += 1_800
        #expect(backups.takeIfDue() == nil)
        #expect(Self.automatic(keyring).count == 1)
        for _ in 0..<3 {
            keyring.clock.now += 3_600
            #expect(backups.takeIfDue() != nil)
            try keyring.createItem(attributes: ["service": "mail"], secret: "later", session: session)
        }
        let kept = Self.automatic(keyring)
        #expect(kept.count == 2, "\(kept)")
        #expect(kept.last == AutomaticBackups.fileName(at: keyring.clock.now))
        #expect(!kept.contains(URL(fileURLWithPath: first).lastPathComponent))
        // The newest holds the last secret, and verifies.
        let newest = backups.directory.appendingPathComponent(try #require(kept.last)).path
        let live = try keyring.daemon.keyring.collections()
        let keys = { (copy: Store.CollectionRecord) in
            live.first { $0.id == copy.id && $0.uuid == copy.uuid }.flatMap { keyring.daemon.keyring.held($0.id) }
        }
        #expect(try Store.verifyBackup(at: newest, keys: keys).opened == 1)
        let status = try keyring.call(TestKeyring.service, Names.Interface.maintenance, "AutomaticBackups").get().tuple
        #expect(status?[1] == .uint64(3_600) && status?[2] == .uint32(2) && status?[3] == .string(newest), "\(String(describing: status))")
    }

    @Test("A secretd started after its last automatic backup takes the next one only once an interval has passed since it")
    func dueAfterStart() throws {
        let keyring = try Self.hourly()
        defer { keyring.remove() }
        let directory = keyring.daemon.automaticBackups.directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Left by an earlier run, 20 minutes ago.
        let earlier = AutomaticBackups.fileName(at: keyring.clock.now - 1_200)
        FileManager.default.createFile(atPath: directory.appendingPathComponent(earlier).path, contents: Data())
        #expect(keyring.daemon.automaticBackups.takeIfDue() == nil)
        keyring.clock.now += 2_400
        #expect(keyring.daemon.automaticBackups.takeIfDue() != nil)
    }

    @Test("backup-interval off takes none; a failed automatic backup is logged as the last failure and tried again only an interval later")
    func disabledAndFailing() throws {
        var configuration = Configuration()
        configuration.backupInterval = 0
        let off = try TestKeyring(configuration: configuration)
        defer { off.remove() }
        #expect(off.daemon.automaticBackups.takeIfDue() == nil)
        off.clock.now += 86_400 * 30
        #expect(off.daemon.automaticBackups.takeIfDue() == nil)
        #expect(!FileManager.default.fileExists(atPath: off.daemon.automaticBackups.directory.path))

        let keyring = try Self.hourly()
        defer { keyring.remove() }
        let backups = keyring.daemon.automaticBackups
        // A file where the directory should be: the backup cannot be written.
        FileManager.default.createFile(atPath: backups.directory.path, contents: Data("in the way".utf8))
        #expect(backups.takeIfDue() == nil)
        #expect(backups.lastFailure?.contains(backups.directory.path) == true, "\(String(describing: backups.lastFailure))")
        keyring.clock.now += 60
        #expect(backups.takeIfDue() == nil)
        #expect(!backups.isDue(at: keyring.clock.now))
        try FileManager.default.removeItem(atPath: backups.directory.path)
        keyring.clock.now += 3_600
        #expect(backups.takeIfDue() != nil)
        #expect(backups.lastFailure == nil)
    }

    @Test("backup-interval, backup-keep and backup-directory parse; bad values are refused")
    func configuration() throws {
        #expect(Configuration().backupInterval == 86_400 && Configuration().backupKeep == 7 && Configuration().backupDirectory == nil)
        let parsed = try Configuration.parse("backup-interval = 12h\nbackup-keep = 30\nbackup-directory = /media/usb/secretd", file: "f")
        #expect(parsed.backupInterval == 43_200 && parsed.backupKeep == 30 && parsed.backupDirectory == "/media/usb/secretd")
        #expect(try Configuration.parse("backup-interval = off", file: "f").backupInterval == 0)
        #expect(try Configuration.parse("backup-interval = 0", file: "f").backupInterval == 0)
        #expect(try Configuration.parse("backup-interval = 1d", file: "f").backupInterval == 86_400)
        #expect(try Configuration.parse("backup-interval = 90m", file: "f").backupInterval == 5_400)
        for bad in ["backup-interval = 10", "backup-interval = 1w", "backup-interval = -1d", "backup-keep = 0", "backup-directory = backups"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try Configuration.parse(bad, file: "f") }
        }
    }
}
