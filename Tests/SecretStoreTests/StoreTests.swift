import Foundation
import Testing

@testable import SecretCrypto
@testable import SecretStore

/// A store in a fresh temporary directory.
func makeStore() throws -> (Store, URL) {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("secretstore-tests-\(UUID().uuidString)/data")
    return (try Store(directory: directory), directory)
}

func secret(_ text: String) -> SecureBytes { SecureBytes(Array(text.utf8)) }
func text(_ bytes: SecureBytes) -> String { bytes.withBytes { String(decoding: $0, as: UTF8.self) } }

@Suite struct StoreTests {
    let password = secret("correct horse")

    func contents(_ label: String, _ attributes: [String: String], _ value: String) -> ItemContents {
        ItemContents(label: label, attributes: attributes, secret: secret(value), contentType: "text/plain")
    }

    @Test("after-first-unlock items open with the key kept after a lock, and only they; a class change re-seals")
    func afterFirstUnlockKey() throws {
        let (store, _) = try makeStore()
        let (login, keys) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let background = try store.createItem(
            in: login, keys: keys, contents: contents("Mail sync", ["service": "mail", "keychain:accessible": "after-first-unlock"], "token"))
        let ordinary = try store.createItem(in: login, keys: keys, contents: contents("Bank", ["service": "bank"], "pin"))
        #expect(background.survivesLock && !ordinary.survivesLock)
        #expect(try store.item(id: background.id)?.survivesLock == true)
        #expect(try store.item(id: ordinary.id)?.survivesLock == false)

        // What a lock keeps opens the first and not the second; it holds no master key.
        let kept = keys.withoutMaster
        #expect(kept.master == nil)
        #expect(!kept.afterFirstUnlock.constantTimeEquals(try #require(keys.master)))
        #expect(text(try store.readItem(background, in: login, keys: kept).secret) == "token")
        #expect(throws: StoreError.locked) { try store.readItem(ordinary, in: login, keys: kept) }
        #expect(throws: StoreError.locked) { try store.deleteItem(ordinary, in: login, keys: kept) }
        #expect(throws: StoreError.locked) {
            try store.createItem(in: login, keys: kept, contents: contents("New", ["service": "new"], "x"))
        }
        #expect(throws: StoreError.locked) { try store.rewrap(login, keys: kept, to: secret("new"), parameters: .testing) }
        // While locked it can be rewritten within its class, not moved out of it.
        let refreshed = try store.updateItem(
            background, in: login, keys: kept,
            contents: contents("Mail sync", ["service": "mail", "keychain:accessible": "after-first-unlock"], "token 2"))
        #expect(text(try store.readItem(refreshed, in: login, keys: kept).secret) == "token 2")
        #expect(throws: StoreError.locked) {
            try store.updateItem(refreshed, in: login, keys: kept, contents: contents("Mail sync", ["service": "mail"], "token 3"))
        }
        #expect(text(try store.readItem(refreshed, in: login, keys: kept).secret) == "token 2")

        // The key is derived again from the password: the item opens after a reopen. Unlocked,
        // a class change re-seals it under the master key, and the kept key no longer opens it.
        let reopened = try store.unlock(login, password: password)
        #expect(reopened.afterFirstUnlock.constantTimeEquals(keys.afterFirstUnlock))
        let moved = try store.updateItem(refreshed, in: login, keys: reopened, contents: contents("Mail sync", ["service": "mail"], "token 3"))
        #expect(!moved.survivesLock)
        #expect(try store.item(id: moved.id)?.survivesLock == false)
        #expect(throws: StoreError.locked) { try store.readItem(moved, in: login, keys: reopened.withoutMaster) }
        #expect(text(try store.readItem(moved, in: login, keys: reopened).secret) == "token 3")
        // The search index follows: the item is found by its attributes, and the kept key deletes an AFU item.
        #expect(try store.search(["service": "mail"]).map(\.id) == [moved.id])
        let other = try store.createItem(
            in: login, keys: keys, contents: contents("Backup", ["service": "backup", "keychain:accessible": "after-first-unlock-device-only"], "b"))
        #expect(other.survivesLock)
        try store.deleteItem(other, in: login, keys: kept)
        #expect(try store.search(["service": "backup"]).isEmpty)
    }

    @Test("files are private: directory 0700, database 0600")
    func permissions() throws {
        let (store, directory) = try makeStore()
        let directoryMode = try FileManager.default.attributesOfItem(atPath: directory.path)[.posixPermissions] as? Int
        let fileMode = try FileManager.default.attributesOfItem(atPath: store.databaseURL.path)[.posixPermissions] as? Int
        #expect(directoryMode == 0o700)
        #expect(fileMode == 0o600)
        // The missing parent is created private too; an existing directory is made private.
        let parentMode = try FileManager.default.attributesOfItem(atPath: directory.deletingLastPathComponent().path)[.posixPermissions] as? Int
        #expect(parentMode == 0o700)
        chmod(directory.path, 0o755)
        _ = try Store(directory: directory)
        #expect(try FileManager.default.attributesOfItem(atPath: directory.path)[.posixPermissions] as? Int == 0o700)
    }

    @Test("a data directory that cannot be made is a clear error naming it and the reason")
    func uncreatableDirectory() throws {
        let (_, directory) = try makeStore()
        let blocker = directory.appendingPathComponent("a-file")
        #expect(FileManager.default.createFile(atPath: blocker.path, contents: Data()))
        #expect(throws: StoreError.io("cannot create data directory \(blocker.path)/data: Not a directory")) {
            try Store(directory: blocker.appendingPathComponent("data"))
        }
    }

    @Test("a collection unlocks with its password only, and a wrong one changes nothing")
    func passwords() throws {
        let (store, directory) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let item = try store.createItem(in: login, keys: key, contents: contents("l", ["a": "1"], "s1"))
        #expect(throws: StoreError.wrongPassword) { try store.unlock(login, password: secret("wrong")) }
        let unlocked = try store.unlock(login, password: password)
        #expect(unlocked.master!.constantTimeEquals(key.master!))
        #expect(text(try store.readItem(item, in: login, keys: unlocked).secret) == "s1")

        // Reopening the file gives the same result.
        let reopened = try Store(directory: directory)
        let again = try #require(try reopened.collection(named: "login"))
        #expect(text(try reopened.readItem(item, in: again, keys: try reopened.unlock(again, password: password)).secret) == "s1")
    }

    @Test("changing the password re-wraps the key; items stay readable")
    func changePassword() throws {
        let (store, _) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let item = try store.createItem(in: login, keys: key, contents: contents("l", [:], "kept"))
        try store.changePassword(login, from: password, to: secret("new pass"), parameters: .testing)
        #expect(throws: StoreError.wrongPassword) { try store.unlock(login, password: password) }
        let newKey = try store.unlock(login, password: secret("new pass"))
        #expect(newKey.master!.constantTimeEquals(key.master!))
        #expect(text(try store.readItem(item, in: login, keys: newKey).secret) == "kept")
        #expect(throws: StoreError.wrongPassword) {
            try store.changePassword(login, from: secret("wrong"), to: secret("x"), parameters: .testing)
        }
    }

    @Test("items round-trip label, attributes, content type and binary secrets")
    func itemRoundTrip() throws {
        let (store, _) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let binary = SecureBytes([0, 1, 0, 255, 0])
        let created = try store.createItem(
            in: login, keys: key,
            contents: ItemContents(label: "Lábel ✓", attributes: ["service": "s", "account": "ä"], secret: binary,
                                   contentType: "application/octet-stream"))
        let read = try store.readItem(created, in: login, keys: key)
        #expect(read.label == "Lábel ✓")
        #expect(read.attributes == ["service": "s", "account": "ä"])
        #expect(read.contentType == "application/octet-stream")
        #expect(read.secret.constantTimeEquals(binary))
        let empty = try store.createItem(in: login, keys: key, contents: contents("", [:], ""))
        #expect(try store.readItem(empty, in: login, keys: key).secret.count == 0)
    }

    @Test("changeCount moves on every write and never on a read")
    func changeCount() throws {
        let (store, _) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        var last = store.changeCount
        func moved() -> Bool {
            defer { last = store.changeCount }
            return store.changeCount != last
        }
        let item = try store.createItem(in: login, keys: key, contents: contents("l", ["a": "1"], "s"))
        #expect(moved())
        _ = try store.readItem(item, in: login, keys: key)
        _ = try store.search(["a": "1"], in: login)
        #expect(!moved())
        _ = try store.updateItem(item, in: login, keys: key, contents: contents("l2", ["a": "1"], "s"))
        #expect(moved())
        try store.deleteItem(item, in: login, keys: key)
        #expect(moved())
    }

    @Test("close folds the write-ahead log into the file; later calls fail with a clear error")
    func close() throws {
        let (store, directory) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let item = try store.createItem(in: login, keys: key, contents: contents("l", ["a": "1"], "kept"))
        #expect(FileManager.default.fileExists(atPath: store.databaseURL.path + "-wal"))
        store.close()
        store.close()  // twice is harmless
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [Store.fileName, Store.fileName + ".checked"])
        #expect(throws: StoreError.io("the database is closed")) { try store.search(["a": "1"], in: login) }

        let reopened = try Store(directory: directory)
        let found = try #require(try reopened.search(["a": "1"]).first)
        #expect(found.id == item.id)
        #expect(text(try reopened.readItem(found, in: login, keys: key).secret) == "kept")
    }

    @Test("search uses the hash index and works without the key")
    func search() throws {
        let (store, _) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let (other, otherKey) = try store.createCollection(name: "other", label: "Other", password: password, parameters: .testing)
        let a = try store.createItem(in: login, keys: key, contents: contents("a", ["service": "mail", "account": "alice"], "1"))
        let b = try store.createItem(in: login, keys: key, contents: contents("b", ["service": "mail", "account": "bob"], "2"))
        let c = try store.createItem(in: other, keys: otherKey, contents: contents("c", ["service": "mail", "account": "alice"], "3"))
        #expect(try store.search(["service": "mail"]).map(\.id) == [a.id, b.id, c.id])
        #expect(try store.search(["service": "mail"], in: login).map(\.id) == [a.id, b.id])
        #expect(try store.search(["service": "mail", "account": "alice"]).map(\.id) == [a.id, c.id])
        #expect(try store.search(["service": "mail", "account": "carol"]).isEmpty)
        // Name and value are hashed together: a value under another name does not match.
        #expect(try store.search(["account": "mail"]).isEmpty)
        #expect(try store.search([:], in: other).map(\.id) == [c.id])
        _ = try store.updateItem(a, in: login, keys: key, contents: contents("a", ["service": "web"], "1"))
        #expect(try store.search(["service": "mail"], in: login).map(\.id) == [b.id])
        try store.deleteItem(b, in: login, keys: key)
        #expect(try store.search(["service": "mail"], in: login).isEmpty)
        try store.deleteCollection(other)
        #expect(try store.search(["service": "mail"]).isEmpty)
        // Updates, deletes and the collection's delete leave no index entry behind.
        let database = try Database(path: store.databaseURL.path)
        #expect(try database.rows("SELECT hash FROM attribute_index WHERE item_id = ?", [.integer(a.id)]).count == 1)
        #expect(try database.rows("SELECT 1 FROM attribute_index WHERE item_id NOT IN (SELECT id FROM items)").isEmpty)

        // An item whose sealed contents no longer open (a damaged row) is still deleted whole:
        // its index entries are found by a scan.
        let damaged = try store.createItem(in: login, keys: key, contents: contents("d", ["service": "d", "n": "1"], "4"))
        try database.run("UPDATE items SET sealed = x'00' WHERE id = ?", [.integer(damaged.id)])
        try store.deleteItem(damaged, in: login, keys: key)
        #expect(try database.rows("SELECT 1 FROM attribute_index WHERE item_id = ?", [.integer(damaged.id)]).isEmpty)
        #expect(try store.item(id: damaged.id) == nil)
    }

    @Test("search picks the rare attribute to drive the query and still matches exactly")
    func searchSelectivity() throws {
        let (store, _) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let (other, otherKey) = try store.createCollection(name: "other", label: "Other", password: password, parameters: .testing)
        var ids: [Int64] = []
        for index in 0..<1500 {
            ids.append(try store.createItem(in: login, keys: key, contents: contents("\(index)", ["service": "common", "account": "a\(index)"], "v")).id)
        }
        let elsewhere = try store.createItem(in: other, keys: otherKey, contents: contents("x", ["service": "common", "account": "a1200"], "v"))
        #expect(try store.search(["service": "common", "account": "a1200"]).map(\.id) == [ids[1200], elsewhere.id])
        #expect(try store.search(["service": "common", "account": "a1200"], in: login).map(\.id) == [ids[1200]])
        #expect(try store.search(["account": "a7", "service": "common"]).map(\.id) == [ids[7]])
        #expect(try store.search(["service": "common", "account": "nobody"]).isEmpty)
        #expect(try store.search(["service": "common"], in: login).count == 1500)
        #expect(try store.search(["service": "common", "extra": "x"]).isEmpty)
        // The attribute that settled the last search is counted first next time; when it is
        // now the common one, the rare one still drives, and the matches are the same.
        #expect(try store.search(["service": "common", "account": "a3"]).map(\.id) == [ids[3]])
        let shared = try store.createItem(in: login, keys: key, contents: contents("s", ["service": "rare", "account": "a3"], "v"))
        #expect(try store.search(["service": "rare", "account": "a3"]).map(\.id) == [shared.id])
        #expect(try store.search(["service": "common", "account": "a3"]).map(\.id) == [ids[3]])
    }

    @Test("an update touches only its own row")
    func rowLevelWrites() throws {
        let (store, directory) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let first = try store.createItem(in: login, keys: key, contents: contents("1", ["n": "1"], "one"))
        let second = try store.createItem(in: login, keys: key, contents: contents("2", ["n": "2"], "two"))
        let database = try Database(path: directory.appendingPathComponent(Store.fileName).path)
        let before = try database.rows("SELECT id, sealed FROM items WHERE id = ?", [.integer(first.id)])
        _ = try store.updateItem(second, in: login, keys: key, contents: contents("2", ["n": "2"], "TWO"))
        let after = try database.rows("SELECT id, sealed FROM items WHERE id = ?", [.integer(first.id)])
        #expect(before == after)
        #expect(text(try store.readItem(second, in: login, keys: key).secret) == "TWO")
    }

    @Test("a sealed item copied onto another row, or altered, fails to open")
    func tamperedItems() throws {
        let (store, directory) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let first = try store.createItem(in: login, keys: key, contents: contents("1", [:], "one"))
        let second = try store.createItem(in: login, keys: key, contents: contents("2", [:], "two"))
        let database = try Database(path: directory.appendingPathComponent(Store.fileName).path)
        try database.run("UPDATE items SET sealed = (SELECT sealed FROM items WHERE id = ?) WHERE id = ?",
                         [.integer(first.id), .integer(second.id)])
        #expect(throws: StoreError.corrupted("authentication failed")) { try store.readItem(second, in: login, keys: key) }
        var sealed = try #require(try database.rows("SELECT sealed FROM items WHERE id = ?", [.integer(first.id)]).first?.first?.blob)
        sealed[sealed.count / 2] ^= 0x40
        try database.run("UPDATE items SET sealed = ? WHERE id = ?", [.blob(sealed), .integer(first.id)])
        #expect(throws: StoreError.corrupted("authentication failed")) { try store.readItem(first, in: login, keys: key) }
    }

    @Test("item contents decode from every format; each is smaller than the one before; bad ones are refused",
          arguments: ["application/octet-stream", "text/plain", "", "text/plain; charset=utf-8"])
    func contentsFormats(contentType: String) throws {
        let original = ItemContents(label: "Lábel", attributes: ["service": "s", "account": "ä"],
                                    secret: SecureBytes([0, 1, 2, 255]), contentType: contentType)
        let fixed = original.encoded(format: .fixedLengths)
        let varint = original.encoded(format: .varintLengths)
        let compact = original.encoded()
        #expect(varint.count + 23 == fixed.count)  // 7 lengths and the count: 4 bytes each against 1, plus the format byte
        // Format 3: no secret length, and a common content type in its one byte.
        let common = ItemContents.commonContentTypes.contains(contentType)
        #expect(compact.count == varint.count - 1 - (common ? contentType.utf8.count : 0))
        for encoded in [fixed, varint, compact] {
            let decoded = try ItemContents.decode(encoded)
            #expect(decoded.label == original.label && decoded.attributes == original.attributes)
            #expect(decoded.contentType == original.contentType && decoded.secret.constantTimeEquals(original.secret))
        }
        let long = ItemContents(label: String(repeating: "x", count: 70_000), attributes: [:], secret: SecureBytes([]), contentType: "")
        #expect(try ItemContents.decode(long.encoded()).label.utf8.count == 70_000)
        #expect(throws: StoreError.corrupted("item format 7 is unknown")) { try ItemContents.decode(SecureBytes([7, 0])) }
        #expect(throws: StoreError.corrupted("item length is too long")) {
            try ItemContents.decode(SecureBytes([2, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))
        }
        #expect(throws: StoreError.corrupted("item is truncated")) { try ItemContents.decode(SecureBytes([2, 5, 0x61])) }
        #expect(throws: StoreError.corrupted("item is truncated")) { try ItemContents.decode(SecureBytes([])) }
        // Format 3: a content type text longer than what follows; an attribute cut short.
        #expect(throws: StoreError.corrupted("item is truncated")) { try ItemContents.decode(SecureBytes([3, 0, 9, 0x61])) }
        #expect(throws: StoreError.corrupted("item is truncated")) { try ItemContents.decode(SecureBytes([3, 0, 0, 1, 3, 0x61])) }
        // An empty secret in format 3 is the end of the bytes.
        #expect(try ItemContents.decode(SecureBytes([3, 0, 1, 0])).secret.count == 0)
        #expect(try ItemContents.decode(SecureBytes([3, 0, 1, 0])).contentType == "application/octet-stream")
    }

    @Test("a database with a negative schema version is refused, not migrated from step -1")
    func negativeSchemaVersion() throws {
        let (store, directory) = try makeStore()
        try Database(path: store.databaseURL.path).execute("PRAGMA user_version = -1")
        #expect(throws: StoreError.corrupted("database schema version -1 is impossible")) { try Store(directory: directory) }
    }

    @Test("stored key parameters beyond the limits refuse to unlock, at once")
    func storedKeyParametersOutOfRange() throws {
        let (store, _) = try makeStore()
        let (login, _) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let database = try Database(path: store.databaseURL.path)
        for update in ["kdf_memory_kib = 4194304", "kdf_iterations = 0", "kdf_lanes = -1", "kdf_iterations = 1000000"] {
            try database.execute("UPDATE collections SET kdf_iterations = 1, kdf_memory_kib = 64, kdf_lanes = 1")
            try database.execute("UPDATE collections SET \(update)")
            #expect(throws: StoreError.corrupted("the collection's key derivation parameters are out of range")) {
                try store.unlock(login, password: password)
            }
        }
        #expect(throws: StoreError.self) {
            try store.createCollection(name: "huge", label: "Huge", password: password,
                                       parameters: KDFParameters(iterations: 11, memoryKiB: 64, lanes: 1))
        }
    }

    @Test("a time before 1970 in a row reads as 1970 (found by fuzzing: it trapped)")
    func negativeTimes() throws {
        let (store, _) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let item = try store.createItem(in: login, keys: key, contents: contents("l", ["a": "b"], "v"))
        try Database(path: store.databaseURL.path).execute("UPDATE items SET created = -5, modified = -1; UPDATE collections SET created = -9")
        #expect(try store.item(id: item.id)?.created == 0)
        #expect(try store.item(id: item.id)?.modified == 0)
        #expect(try store.collection(named: "login")?.created == 0)
    }

    @Test("a database from a newer schema version is refused, untouched")
    func newerSchema() throws {
        let (store, directory) = try makeStore()
        let database = try Database(path: store.databaseURL.path)
        try database.execute("PRAGMA user_version = 99")
        #expect(throws: StoreError.newerSchema(found: 99, supported: Migrations.currentVersion)) {
            try Store(directory: directory)
        }
        #expect(try database.userVersion == 99)
    }

    @Test("a foreign, truncated or corrupted file is refused with a clear error", arguments: ["foreign", "truncated", "garbled"])
    func badFiles(kind: String) throws {
        let (store, directory) = try makeStore()
        let (login, key) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        for index in 0..<50 { _ = try store.createItem(in: login, keys: key, contents: contents("\(index)", ["i": "\(index)"], "v")) }
        try Database(path: store.databaseURL.path).execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let file = store.databaseURL.path
        var bytes = try #require(FileManager.default.contents(atPath: file))
        switch kind {
        case "foreign": bytes = Data("this is not a database, just some text\n".utf8)
        case "truncated": bytes = bytes.prefix(bytes.count / 3)
        default:
            for offset in stride(from: 4096, to: bytes.count, by: 97) { bytes[offset] ^= 0xA5 }
        }
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        try bytes.write(to: URL(fileURLWithPath: file))
        do {
            let reopened = try Store(directory: directory)
            // If SQLite can still read the header, the damage must surface as an error, never as wrong data.
            let collection = try #require(try reopened.collection(named: "login"))
            let key = try reopened.unlock(collection, password: password)
            for item in try reopened.search([:]) { _ = try reopened.readItem(item, in: collection, keys: key) }
            Issue.record("damaged file (\(kind)) was accepted")
        } catch let error as StoreError {
            switch error {
            case .corrupted, .database: break
            default: Issue.record("unexpected error \(error)")
            }
            #expect(!error.description.isEmpty)
        }
    }

    @Test("collections and aliases, which the store keeps in memory, are current after every write")
    func collectionsStayCurrent() throws {
        let (store, _) = try makeStore()
        #expect(try store.collections().isEmpty && store.aliases().isEmpty)
        let (login, _) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        #expect(try store.collections().map(\.label) == ["Login"])
        try store.setLabel("Mine", of: login)
        #expect(try store.collection(named: "login")?.label == "Mine")
        try store.setAlias("default", to: login)
        #expect(try store.aliases() == ["default": "login"])
        let before = try #require(try store.collection(named: "login"))
        try store.changePassword(before, from: password, to: secret("new"), parameters: .testing)
        #expect(try store.collection(named: "login")?.label == "Mine")
        try store.deleteCollection(login)
        #expect(try store.collections().isEmpty && store.aliases().isEmpty)
    }

    @Test("aliases point at collections and go away with them")
    func aliases() throws {
        let (store, _) = try makeStore()
        let (login, _) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        try store.setAlias("default", to: login)
        #expect(try store.aliases() == ["default": "login"])
        try store.setAlias("default", to: nil)
        #expect(try store.aliases().isEmpty)
        try store.setAlias("default", to: login)
        try store.deleteCollection(login)
        #expect(try store.aliases().isEmpty)
        #expect(throws: StoreError.invalidInput("the password is empty")) {
            try store.createCollection(name: "empty", label: "", password: SecureBytes(count: 0), parameters: .testing)
        }
        #expect(throws: StoreError.invalidInput("collection name is empty")) {
            try store.createCollection(name: "", label: "", password: password, parameters: .testing)
        }
    }

    @Test("an item sealed apart (on another thread) is written under the id reserved for it; ids are never handed out twice, not even after a rollback or a restart; one sealed for another keyring is refused")
    func sealedApart() throws {
        let (store, directory) = try makeStore()
        let (login, keys) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let (work, workKeys) = try store.createCollection(name: "work", label: "Work", password: password, parameters: .testing)
        let first = try store.createItem(in: login, keys: keys, contents: contents("First", ["n": "1"], "one"))
        let reserved = try store.reserveItemID()
        #expect(reserved > first.id)
        // Sealed while other items are created; they take other ids.
        let sealed = try Store.seal(contents("Apart", ["n": "apart"], "sealed apart"), as: reserved, in: login, keys: keys)
        let meanwhile = try store.createItem(in: login, keys: keys, contents: contents("Meanwhile", ["n": "2"], "two"))
        #expect(meanwhile.id > reserved)
        let apart = try store.createItem(sealed, in: login)
        #expect(apart.id == reserved)
        #expect(try store.search(["n": "apart"], in: login).map(\.id) == [reserved])
        #expect(text(try store.readItem(apart, in: login, keys: keys).secret) == "sealed apart")
        // A rolled-back create does not give its id again.
        #expect(throws: StoreError.locked) {
            try store.createItem(in: login, keys: keys.withoutMaster, contents: contents("Refused", ["n": "3"], "x"))
        }
        let after = try store.reserveItemID()
        #expect(after > meanwhile.id)
        // Sealed for one keyring, written into another: refused, nothing written.
        let elsewhere = try Store.seal(contents("Elsewhere", ["n": "4"], "x"), as: after, in: login, keys: keys)
        #expect(throws: StoreError.invalidInput("the item was sealed for another keyring")) { try store.createItem(elsewhere, in: work) }
        #expect(try store.search(["n": "4"]).isEmpty)
        _ = workKeys
        // A new store over the same file goes on above every id an item had, a deleted one's
        // too (ids reserved and never written may come again: no item had them).
        try store.deleteItem(meanwhile, in: login, keys: keys)
        store.close()
        let reopened = try Store(directory: directory)
        #expect(try reopened.reserveItemID() > meanwhile.id)
    }

    @Test("background checkpoints: commits only append to the log, another connection folds it in, the log starts over instead of growing, and a close still leaves the file alone with every item")
    func backgroundCheckpoints() throws {
        let (store, directory) = try makeStore()
        let (login, keys) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        store.groupsCommits = true
        #expect(store.checkpointInBackground())
        let checkpointer = try #require(store.database.checkpointer)
        let wal = store.databaseURL.path + "-wal"
        func walSize() -> Int { ((try? FileManager.default.attributesOfItem(atPath: wal))?[.size] as? Int) ?? 0 }

        // Eight rounds of a 2 MiB item (over 500 log pages each, 1,000 asks for a checkpoint):
        // 16 MiB written in all. Each round reads at once (the next call's snapshot, begun
        // before the checkpoint ends), waits for the checkpoint it asked for, then lets the
        // snapshot go as a turn's end does.
        let big = String(repeating: "s", count: 2 * 1024 * 1024)
        var items: [Store.ItemRecord] = []
        var largestLog = 0
        for round in 0..<8 {
            let before = checkpointer.finished
            items.append(try store.createItem(in: login, keys: keys, contents: contents("Big \(round)", ["round": "\(round)"], big + "\(round)")))
            try store.commitPending()
            largestLog = max(largestLog, walSize())
            #expect(try store.search(["round": "\(round)"], in: login).map(\.id) == [items[round].id])
            if round % 2 == 1 {
                let deadline = Date().addingTimeInterval(30)
                while checkpointer.finished == before, Date() < deadline { usleep(1_000) }
                #expect(checkpointer.finished > before, "no checkpoint after round \(round)")
            }
            store.renewSnapshotIfCheckpointed()
        }
        // Without the log starting over it would hold all 16 MiB; it holds about two rounds.
        #expect(largestLog > 4 * 1024 * 1024 && largestLog < 6 * 1024 * 1024, "largest log: \(largestLog) bytes")
        // Another connection reads what was folded into the file.
        let observer = try Store(directory: directory)
        #expect(try observer.search([:], in: login).count == 8)
        observer.close()

        store.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [Store.fileName, Store.fileName + ".checked"])
        let reopened = try Store(directory: directory)
        for (round, item) in items.enumerated() {
            #expect(text(try reopened.readItem(item, in: login, keys: keys).secret) == big + "\(round)")
        }
    }

    @Test("grouped work: reads share one snapshot that a write makes the pending commit; another connection sees nothing before commitPending, which ends the group")
    func groupedWork() throws {
        let (store, directory) = try makeStore()
        let (login, keys) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        store.groupsCommits = true
        #expect(!store.hasOpenGroup)

        // A read opens the group, with nothing to commit; ending it lets go of the snapshot.
        #expect(try store.search(["service": "mail"], in: login).isEmpty)
        #expect(store.hasOpenGroup && !store.hasPendingCommit)
        try store.commitPending()
        #expect(!store.hasOpenGroup)

        // A read, then writes: the snapshot becomes the write transaction, for a transaction
        // and for a single statement alike, and the group reads what it wrote.
        #expect(try store.search(["service": "mail"], in: login).isEmpty)
        let mail = try store.createItem(in: login, keys: keys, contents: contents("Mail", ["service": "mail"], "s1"))
        try store.setAlias("work", to: login)
        #expect(store.hasPendingCommit)
        #expect(try store.search(["service": "mail"], in: login).map(\.id) == [mail.id])
        // A transaction that fails inside the group takes back its own writes only.
        #expect(throws: StoreError.locked) {
            try store.createItem(in: login, keys: keys.withoutMaster, contents: contents("Bank", ["service": "bank"], "pin"))
        }
        #expect(try store.search([:], in: login).map(\.id) == [mail.id])

        let observer = try Store(directory: directory)
        #expect(try observer.item(id: mail.id) == nil, "not visible before the commit")
        try store.commitPending()
        #expect(!store.hasOpenGroup && !store.hasPendingCommit)
        #expect(try observer.item(id: mail.id) != nil)
        #expect(try observer.aliases()["work"] == "login")
        #expect(try observer.search([:], in: login).map(\.id) == [mail.id])
    }

    @Test("grouped work: a write that fails first in a group rolls the group back (it had only read); the next write opens a new one")
    func failedFirstWriteOfGroup() throws {
        let (store, directory) = try makeStore()
        let (login, keys) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        store.groupsCommits = true
        #expect(try store.search(["service": "mail"], in: login).isEmpty)
        #expect(store.hasOpenGroup && !store.hasPendingCommit)
        // Its row is inserted, then sealing it fails: the insert is taken back.
        #expect(throws: StoreError.locked) {
            try store.createItem(in: login, keys: keys.withoutMaster, contents: contents("Bank", ["service": "bank"], "pin"))
        }
        #expect(!store.hasPendingCommit)
        #expect(try store.search([:], in: login).isEmpty)
        let mail = try store.createItem(in: login, keys: keys, contents: contents("Mail", ["service": "mail"], "s1"))
        #expect(store.hasPendingCommit)
        try store.commitPending()
        let observer = try Store(directory: directory)
        #expect(try observer.search([:], in: login).map(\.id) == [mail.id])
        #expect(text(try observer.readItem(mail, in: login, keys: keys).secret) == "s1")
    }

    @Test("the row item(id:) read is opened without reading it again only while nothing was written since; a rolled-back write does not open")
    func lastReadRow() throws {
        let (store, _) = try makeStore()
        let (login, keys) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let item = try store.createItem(in: login, keys: keys, contents: contents("Mail", ["service": "mail"], "s1"))
        let read = try #require(try store.item(id: item.id))
        #expect(text(try store.readItem(read, in: login, keys: keys).secret) == "s1")
        // Written since the record was read: the new contents open, through the old record too.
        _ = try store.updateItem(read, in: login, keys: keys, contents: contents("Mail", ["service": "mail"], "s2"))
        #expect(text(try store.readItem(read, in: login, keys: keys).secret) == "s2")

        // A write and a read of the row inside a transaction that then fails: the write is
        // rolled back, and so is what the read kept.
        #expect(throws: StoreError.locked) {
            try store.transaction { () throws(StoreError) in
                _ = try store.updateItem(read, in: login, keys: keys, contents: contents("Mail", ["service": "mail"], "s3"))
                guard let during = try store.item(id: item.id) else { throw .notFound }
                #expect(text(try store.readItem(during, in: login, keys: keys).secret) == "s3")
                throw StoreError.locked
            }
        }
        #expect(text(try store.readItem(read, in: login, keys: keys).secret) == "s2")
    }

    @Test("a transaction lands whole or not at all: the writes inside it are not savepoints, and one that fails, even caught, undoes the whole")
    func wholeTransaction() throws {
        for grouped in [false, true] {
            let (store, directory) = try makeStore()
            let (login, keys) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
            store.groupsCommits = grouped
            let before = try store.createItem(in: login, keys: keys, contents: contents("Before", ["service": "before"], "s0"))

            // Every write lands.
            let landed = try store.transaction { () throws(StoreError) -> [Store.ItemRecord] in
                try (1...3).map { (index) throws(StoreError) in
                    try store.createItem(in: login, keys: keys, contents: contents("Item \(index)", ["n": "\(index)"], "s\(index)"))
                }
            }
            #expect(Set(try store.search([:], in: login).map(\.id)) == Set([before.id] + landed.map(\.id)))

            // A write inside fails after its row went in (past its creator's quota of one
            // item); the body catches it and goes on: the whole is undone and throws it.
            let quota = Store.Quota(items: 1, bytes: 1 << 20, databaseBytes: 1 << 30)
            #expect(throws: StoreError.overQuota(.items(1))) {
                try store.transaction { () throws(StoreError) in
                    _ = try store.createItem(in: login, keys: keys, contents: contents("Kept?", ["n": "4"], "s4"), creator: "app", within: quota)
                    do {
                        _ = try store.createItem(in: login, keys: keys, contents: contents("Over", ["n": "5"], "s5"), creator: "app", within: quota)
                        Issue.record("the second item of the creator was not refused")
                    } catch {
                        // caught, and the body goes on
                    }
                    _ = try store.createItem(in: login, keys: keys, contents: contents("Kept?", ["n": "6"], "s6"))
                }
            }
            #expect(Set(try store.search([:], in: login).map(\.id)) == Set([before.id] + landed.map(\.id)))

            // A failure not caught undoes the whole too; the store goes on afterwards.
            #expect(throws: StoreError.overQuota(.items(1))) {
                try store.transaction { () throws(StoreError) in
                    _ = try store.createItem(in: login, keys: keys, contents: contents("Kept?", ["n": "7"], "s7"), creator: "app", within: quota)
                    _ = try store.createItem(in: login, keys: keys, contents: contents("Over", ["n": "8"], "s8"), creator: "app", within: quota)
                }
            }
            let after = try store.createItem(in: login, keys: keys, contents: contents("After", ["service": "after"], "s9"))
            if grouped { try store.commitPending() }
            let observer = try Store(directory: directory)
            #expect(Set(try observer.search([:], in: login).map(\.id)) == Set([before.id, after.id] + landed.map(\.id)))
            #expect(text(try observer.readItem(after, in: login, keys: keys).secret) == "s9")
            #expect(try observer.integrityProblems().isEmpty)
        }
    }
}
