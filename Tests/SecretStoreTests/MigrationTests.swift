import Foundation
import Testing

@testable import SecretCrypto
@testable import SecretStore

/// Databases written by each schema version's own code (Fixtures/README.md), opened by today's
/// Store: everything they hold must come through, and the file must end at the current version.
@Suite struct MigrationTests {
    /// What every fixture holds: the same program wrote it at each version.
    struct FixtureItem {
        let id: Int64
        let collection: String
        let label: String
        let attributes: [String: String]
        let secret: [UInt8]
        let contentType: String
        let accessGroup: String
        /// Whether it was changed two seconds after it was created.
        let updated: Bool
    }

    static let passwords = ["login": "fixture password", "work": "second password"]

    /// Item 5 was deleted, so ids have a gap.
    static let items: [FixtureItem] = [
        FixtureItem(
            id: 1, collection: "login", label: "Mail ✓", attributes: ["service": "mail", "account": "alice"],
            secret: Array("s3cr3t".utf8), contentType: "text/plain", accessGroup: "default", updated: false),
        FixtureItem(
            id: 2, collection: "login", label: "Binary key", attributes: ["service": "ssh", "kind": "binary"],
            secret: [0, 1, 0, 255, 0, 0x80], contentType: "application/octet-stream", accessGroup: "default", updated: false),
        FixtureItem(
            id: 3, collection: "login", label: "Deploy token",
            attributes: ["service": "deploy", "account": "ci", "keychain:access-group": "com.example.deploy"],
            secret: Array("token-1".utf8), contentType: "text/plain", accessGroup: "com.example.deploy", updated: false),
        FixtureItem(
            id: 4, collection: "login", label: "", attributes: [:], secret: [], contentType: "", accessGroup: "default",
            updated: false),
        FixtureItem(
            id: 6, collection: "login", label: "Updated", attributes: ["service": "web", "account": "bob"],
            secret: Array("second".utf8), contentType: "text/plain", accessGroup: "default", updated: true),
        FixtureItem(
            id: 7, collection: "login", label: "Many attributes",
            attributes: ["service": "many", "account": "ä", "host": "日本.example", "port": "443", "protocol": "https", "empty": ""],
            secret: Array("pässwörd ✓".utf8), contentType: "text/plain; charset=utf-8", accessGroup: "default", updated: false),
        FixtureItem(
            id: 8, collection: "work", label: "VPN", attributes: ["service": "vpn", "account": "alice"],
            secret: Array("vpn-pass".utf8), contentType: "text/plain", accessGroup: "default", updated: false),
        FixtureItem(
            id: 9, collection: "work", label: "Tool", attributes: ["service": "tool", "keychain:access-group": "com.example.tools"],
            secret: Array("tool secret".utf8), contentType: "text/plain", accessGroup: "com.example.tools", updated: false),
    ]

    /// When each fixture was written (seconds since 1970): everything was created then, and
    /// item 6 and the `work` collection's label were changed two seconds later.
    static let writtenAt = [1: UInt64(1_796_169_102), 2: 1_796_169_104, 3: 1_796_169_107, 4: 1_796_193_232, 5: 1_796_299_486, 6: 1_796_309_962, 7: 1_796_484_938, 8: 1_796_533_077, 9: 1_796_541_912, 10: 1_796_565_747]

    /// The committed fixture of schema `version`; never opened in place (SQLite would add its
    /// -wal and -shm files next to it).
    static func fixture(_ version: Int) -> URL? {
        Bundle.module.url(forResource: "schema-v\(version)", withExtension: "sqlite", subdirectory: "Fixtures")
    }

    /// A data directory holding a copy of the fixture of `version` as secretd's database.
    static func copyOfFixture(_ version: Int) throws -> URL {
        let fixture = try #require(Self.fixture(version), "Fixtures/schema-v\(version).sqlite is missing")
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("secretstore-migration-\(UUID().uuidString)/data")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: fixture, to: directory.appendingPathComponent(Store.fileName))
        return directory
    }

    /// The schema version in a database file's header (`PRAGMA user_version`, bytes 60-63),
    /// read without SQLite.
    static func headerVersion(of file: URL) throws -> Int {
        let header = try #require(FileManager.default.contents(atPath: file.path)?.prefix(64))
        return header.suffix(4).reduce(0) { $0 << 8 | Int($1) }
    }

    /// Checks that `store`, opened on the fixture of `version`, holds all of it; unlocks every
    /// collection on the way.
    func expectFixtureContents(_ store: Store, version: Int) throws {
        let writtenAt = try #require(Self.writtenAt[version])
        let collections = try store.collections()
        #expect(collections.map(\.name) == ["login", "work"])
        #expect(collections.map(\.label) == ["Login", "Work ✓"])
        #expect(collections.map(\.created) == [writtenAt, writtenAt])
        #expect(collections.map(\.modified) == [writtenAt, writtenAt + 2])
        #expect(try store.aliases() == ["default": "login", "secondary": "work"])

        // Locked: every item, its times, and searches through the index.
        let found = try store.search([:])
        #expect(found.map(\.id) == Self.items.map(\.id))
        for (record, item) in zip(found, Self.items) {
            #expect(record.collectionID == collections.first { $0.name == item.collection }?.id)
            #expect(record.created == writtenAt, "item \(item.id)")
            #expect(record.modified == (item.updated ? writtenAt + 2 : writtenAt), "item \(item.id)")
        }
        #expect(try store.search(["service": "mail", "account": "alice"]).map(\.id) == [1])
        #expect(try store.search(["account": "alice"]).map(\.id) == [1, 8])
        #expect(try store.search(["account": "alice"], in: collections[1]).map(\.id) == [8])
        #expect(try store.search(["host": "日本.example", "empty": ""]).map(\.id) == [7])
        #expect(try store.search(["account": "old"]).isEmpty)  // item 6's attributes before its update
        #expect(try store.search(["service": "gone"]).isEmpty)  // the deleted item 5

        // Unlocked: each collection's items open to what was written, and have their groups.
        for collection in collections {
            #expect(throws: StoreError.wrongPassword) { try store.unlock(collection, password: secret("wrong")) }
            let key = try store.unlock(collection, password: secret(try #require(Self.passwords[collection.name])))
            for item in Self.items where item.collection == collection.name {
                let record = try #require(try store.item(id: item.id))
                #expect(record.accessGroup == item.accessGroup)
                let contents = try store.readItem(record, in: collection, keys: key)
                #expect(contents.label == item.label, "item \(item.id)")
                #expect(contents.attributes == item.attributes, "item \(item.id)")
                #expect(contents.contentType == item.contentType, "item \(item.id)")
                #expect(contents.secret.withBytes { Array($0) } == item.secret, "item \(item.id)")
            }
        }
        #expect(try store.search(["keychain:access-group": "com.example.deploy"]).map(\.id) == [3])
        #expect(try store.search(["keychain:access-group": "com.example.tools"]).map(\.id) == [9])
        #expect(try store.search(["keychain:access-group": "default"]).map(\.id) == [1, 2, 4, 6, 7, 8])
    }

    /// Checks that a migrated store still writes: a new item takes the next id, and an old
    /// item's update and another's delete leave the index exact.
    func expectWritesWork(_ store: Store, _ database: Database) throws {
        let login = try #require(try store.collection(named: "login"))
        let key = try store.unlock(login, password: secret("fixture password"))
        let created = try store.createItem(
            in: login, keys: key,
            contents: ItemContents(label: "New", attributes: ["service": "new"], secret: secret("n"), contentType: "text/plain"))
        #expect(created.id == 10)
        let mail = try #require(try store.item(id: 1))
        _ = try store.updateItem(
            mail, in: login, keys: key,
            contents: ItemContents(label: "Mail", attributes: ["service": "mail"], secret: secret("s4"), contentType: "text/plain"))
        #expect(text(try store.readItem(mail, in: login, keys: key).secret) == "s4")
        #expect(try store.search(["account": "alice"]).map(\.id) == [8])
        try store.deleteItem(try #require(try store.item(id: 7)), in: login, keys: key)
        #expect(try store.search(["service": "many"]).isEmpty)
        // 19 entries, less item 1's account and item 7's six, plus the new item's one.
        #expect(try database.rows("SELECT count(*) FROM attribute_index").first?.first?.integer == 19 - 1 - 6 + 1)
        #expect(try database.rows("SELECT 1 FROM attribute_index WHERE item_id NOT IN (SELECT id FROM items)").isEmpty)
    }

    /// Opens the copy of the fixture of `version` (1 to 3) with today's Store and checks the
    /// migration: the current version, the old index gone, its pages given back, every item.
    func expectMigration(from version: Int) throws {
        let directory = try Self.copyOfFixture(version)
        let file = directory.appendingPathComponent(Store.fileName)
        #expect(try Self.headerVersion(of: file) == version)
        let sizeBefore = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0

        let store = try Store(directory: directory)
        let database = try Database(path: file.path)
        #expect(try database.userVersion == Migrations.currentVersion)
        let names = Set(try database.rows("SELECT name FROM sqlite_master").compactMap { $0.first?.text })
        #expect(names.isDisjoint(with: ["attribute_hashes", "items_by_collection", "items_by_access_group"]))
        #expect(names.contains("attribute_index"))
        #expect(try database.rows("PRAGMA freelist_count").first?.first?.integer == 0)  // vacuumed
        try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let sizeAfter = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0
        // Smaller, beyond the page each empty table and index of versions 6 and 10 (sync), 7
        // (the quotas' creator_usage) and 8 (the audit trail) takes.
        let pageSize = Int(try database.rows("PRAGMA page_size").first?.first?.integer ?? 4096)
        let syncTrees = Int(try database.rows("SELECT count(*) FROM sqlite_master WHERE tbl_name LIKE 'sync%'").first?.first?.integer ?? 0)
        #expect(syncTrees == 7)
        let auditTrees = Int(try database.rows("SELECT count(*) FROM sqlite_master WHERE tbl_name LIKE 'audit%'").first?.first?.integer ?? 0)
        #expect(auditTrees == 4)
        let quotaTrees = Int(try database.rows("SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'index') AND tbl_name = 'creator_usage'").first?.first?.integer ?? 0)
        #expect(quotaTrees == 1)
        // And beyond the schema's own pages past its first: the later versions' tables and
        // triggers made it longer.
        let schemaPages = Int(try database.rows("SELECT count(*) FROM dbstat WHERE name = 'sqlite_schema'").first?.first?.integer ?? 1)
        #expect(sizeAfter - (syncTrees + quotaTrees + auditTrees + schemaPages - 1) * pageSize < sizeBefore)
        #expect(try database.rows("SELECT count(*) FROM attribute_index").first?.first?.integer == 19)

        try expectFixtureContents(store, version: version)
        try expectWritesWork(store, database)
    }

    @Test("a version 1 database migrates: items get their access group at the next unlock, all else comes through")
    func migrationFromVersion1() throws {
        // Before any unlock the groups are unknown (version 1 kept them sealed only), and a
        // search by group finds nothing yet; unlocking one collection assigns its items only.
        let directory = try Self.copyOfFixture(1)
        let store = try Store(directory: directory)
        #expect(try store.search([:]).allSatisfy { $0.accessGroup == nil })
        #expect(try store.search(["keychain:access-group": "com.example.deploy"]).isEmpty)
        let work = try #require(try store.collection(named: "work"))
        _ = try store.unlock(work, password: secret("second password"))
        #expect(try store.search([:]).map(\.accessGroup) == [nil, nil, nil, nil, nil, nil, "default", "com.example.tools"])
        store.close()

        try expectMigration(from: 1)
    }

    @Test("a version 2 database migrates to the smaller index, gives back the old one's pages, and all comes through")
    func migrationFromVersion2() throws {
        try expectMigration(from: 2)
    }

    @Test("a version 3 database migrates to smaller rows (default and unknown groups, no index key lists), vacuumed, all comes through")
    func migrationFromVersion3() throws {
        try expectMigration(from: 3)
        // The groups as version 4 stores them: NULL for default, names for the others.
        let directory = try Self.copyOfFixture(3)
        _ = try Store(directory: directory)
        let database = try Database(path: directory.appendingPathComponent(Store.fileName).path)
        let stored = try database.rows("SELECT id, access_group FROM items ORDER BY id").map { ($0[0].integer ?? 0, $0[1]) }
        #expect(stored.map(\.0) == Self.items.map(\.id))
        #expect(stored.map(\.1) == Self.items.map { $0.accessGroup == "default" ? .null : .text($0.accessGroup) })
        let columns = try database.rows("PRAGMA table_info(items)").compactMap { $0[1].text }
        #expect(!columns.contains("attribute_keys"))
    }

    @Test("a database of the current version opens and reads unchanged, byte for byte")
    func currentVersionOpensUnchanged() throws {
        let version = Migrations.currentVersion
        let directory = try Self.copyOfFixture(version)
        let file = directory.appendingPathComponent(Store.fileName)
        #expect(try Self.headerVersion(of: file) == version)
        let before = try #require(FileManager.default.contents(atPath: file.path))

        let store = try Store(directory: directory)
        try expectFixtureContents(store, version: version)
        store.close()
        #expect(FileManager.default.contents(atPath: file.path) == before, "opening and reading a current file changed it")

        let reopened = try Store(directory: directory)
        try expectWritesWork(reopened, try Database(path: file.path))
    }

    @Test("every schema version has a fixture, written at that version")
    func everyVersionHasAFixture() throws {
        for version in 1...Migrations.currentVersion {
            let fixture = try #require(
                Self.fixture(version),
                "no Fixtures/schema-v\(version).sqlite: write one with the code of version \(version) (Fixtures/README.md)")
            #expect(try Self.headerVersion(of: fixture) == version)
            #expect(Self.writtenAt[version] != nil, "MigrationTests.writtenAt has no time for schema-v\(version).sqlite")
        }
    }
}
