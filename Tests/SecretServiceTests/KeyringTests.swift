import Foundation
import KeychainCore
@testable import SecretCrypto
@testable import SecretService
import SecretStore
import Testing

/// The keyring layer alone, over a store in a fresh directory: every change publishes one
/// event, in order, and nothing else does; locks come from the keys held; a transaction that
/// fails publishes nothing and keeps no key.
@Suite struct KeyringTests {
    /// A keyring over a fresh store, with what it published, each event as a short line.
    final class Fixture {
        let directory: URL
        let keyring: Keyring
        var published: [String] = []

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("keyring-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            keyring = Keyring(store: try Store(directory: directory))
            keyring.subscribe { [unowned self] event in published.append(Self.describe(event)) }
        }

        deinit {
            keyring.store.close()
            try? FileManager.default.removeItem(at: directory)
        }

        static func describe(_ event: KeyringEvent) -> String {
            switch event {
            case .itemCreated(let item, let collection, _, _): "created \(collection.name)/\(item.id)"
            case .itemChanged(let before, let after, let label, _, let collection):
                "changed \(collection.name)/\(before.id)\(before.id == after.id ? "" : "→\(after.id)") \(label)"
            case .itemDeleted(let item, let collection, _, _): "deleted \(collection.name)/\(item.id)"
            case .collectionCreated(let collection): "collection \(collection.name)"
            case .collectionRelabelled(let collection, let label): "relabelled \(collection.name) \(label)"
            case .collectionDeleted(let collection): "deleted \(collection.name)"
            case .unlocked(let collection): "unlocked \(collection.name)"
            case .locked(let collection): "locked \(collection.name)"
            case .secretRead(let item, let collection, _, _, let route): "read \(collection.name)/\(item.id) \(route)"
            case .refused(let refusal): "refused \(refusal.route)"
            case .restored(let appeared): "restored, appeared \(appeared.map(\.name).sorted().joined(separator: ","))"
            }
        }

        func createCollection(_ name: String) throws(StoreError) -> (Store.CollectionRecord, Store.ItemKeys) {
            try keyring.createCollection(
                name: name, label: name.capitalized,
                key: try NewCollectionKey(password: SecureBytes(Array("pw".utf8)), parameters: .testing))
        }

        static func contents(_ label: String, accessible: String? = nil) -> ItemContents {
            var attributes = ["service": label]
            if let accessible { attributes[ItemAccessibility.attribute] = accessible }
            return ItemContents(label: label, attributes: attributes, secret: SecureBytes(Array("s".utf8)), contentType: "text/plain")
        }
    }

    @Test("each change of an item or a collection publishes one event, in order, once made")
    func changesPublish() throws {
        let fixture = try Fixture()
        let keyring = fixture.keyring
        let (login, keys) = try fixture.createCollection("login")
        let item = try keyring.createItem(in: login, keys: keys, contents: Fixture.contents("mail"))
        _ = try keyring.updateItem(item, in: login, keys: keys, contents: Fixture.contents("mail2"))
        try keyring.setLabel("Mine", of: login)
        try keyring.deleteItem(item, in: login, keys: keys)
        try keyring.deleteCollection(login)
        #expect(fixture.published == [
            "collection login", "created login/\(item.id)", "changed login/\(item.id) mail2", "relabelled login Mine",
            "deleted login/\(item.id)", "deleted login",
        ])
        // Deleting forgot its keys; a change that fails publishes nothing.
        #expect(keyring.held(login.id) == nil)
        let (work, workKeys) = try fixture.createCollection("work")
        let kept = try keyring.createItem(in: work, keys: workKeys, contents: Fixture.contents("kept"))
        #expect(throws: StoreError.locked) {
            try keyring.updateItem(kept, in: work, keys: workKeys.withoutMaster, contents: Fixture.contents("lost"))
        }
        #expect(fixture.published.count == 8)
    }

    @Test("a restore forgets every key and publishes: kept keyrings that were unlocked locked, vanished ones deleted, relabelled ones, then restored with those that appeared; keys of a replaced keyring are not taken")
    func restorePublishes() throws {
        let fixture = try Fixture()
        let keyring = fixture.keyring
        let (login, loginKeys) = try fixture.createCollection("login")
        _ = try keyring.createItem(in: login, keys: loginKeys, contents: Fixture.contents("mail"))
        let (work, workKeys) = try fixture.createCollection("work")
        try keyring.store.commitPending()
        let backup = fixture.directory.appendingPathComponent("backup.sqlite3").path
        _ = try keyring.backup(to: backup, replacing: false) { _ in nil }
        // After the backup: login relabelled, work deleted, a new keyring.
        try keyring.setLabel("Mine", of: login)
        try keyring.deleteCollection(work)
        let (fresh, _) = try fixture.createCollection("fresh")
        try keyring.store.commitPending()
        fixture.published.removeAll()

        let previous = fixture.directory.appendingPathComponent("before").path
        let report = try keyring.restore(from: backup, keepingCurrentAt: previous) { copy in
            copy.id == login.id ? loginKeys : nil
        }
        #expect(report.keyrings == 2 && report.opened == 1)
        #expect(fixture.published == ["locked login", "deleted fresh", "relabelled login Login", "restored, appeared work"])
        #expect(keyring.held(login.id) == nil && keyring.held(fresh.id) == nil)
        #expect(FileManager.default.fileExists(atPath: previous))
        // An unlock of the keyring the restore took away (its password was being checked) keeps nothing.
        keyring.unlocked(fresh, with: loginKeys)
        #expect(keyring.held(fresh.id) == nil)
        // The restored work keyring opens with its keys.
        let restoredWork = try #require(try keyring.collection(named: "work"))
        keyring.unlocked(restoredWork, with: workKeys)
        #expect(!keyring.isLocked(restoredWork))
    }

    @Test("lock and unlock publish only a change of state; the session keyring never locks")
    func lockingPublishesChanges() throws {
        let fixture = try Fixture()
        let keyring = fixture.keyring
        let (login, keys) = try fixture.createCollection("login")
        let (session, _) = try fixture.createCollection(SecretServiceNames.sessionCollection)
        fixture.published.removeAll()

        keyring.unlocked(login, with: keys)  // unlocked already: nothing to tell
        #expect(keyring.lock(login))
        #expect(keyring.isLocked(login))
        #expect(!keyring.lock(login))  // locked already
        keyring.unlocked(login, with: keys)
        #expect(!keyring.isLocked(login))
        #expect(!keyring.lock(session))
        #expect(!keyring.isLocked(session))
        #expect(fixture.published == ["locked login", "unlocked login"])
    }

    @Test("lockAll locks from the keys held: every unlocked keyring but the session one, and with lock --all the kept after-first-unlock keys too")
    func lockAllFromHeldKeys() throws {
        let fixture = try Fixture()
        let keyring = fixture.keyring
        let (login, loginKeys) = try fixture.createCollection("login")
        let (work, _) = try fixture.createCollection("work")
        _ = try fixture.createCollection(SecretServiceNames.sessionCollection)
        let kept = try keyring.createItem(in: login, keys: loginKeys, contents: Fixture.contents("sync", accessible: "after-first-unlock"))
        let plain = try keyring.createItem(in: login, keys: loginKeys, contents: Fixture.contents("mail"))
        fixture.published.removeAll()

        #expect(keyring.lockAll().map(\.name) == ["login", "work"])
        #expect(fixture.published == ["locked login", "locked work"])
        // An ordinary lock keeps the key of after-first-unlock items only.
        #expect(keyring.opening(kept) != nil)
        #expect(keyring.opening(plain) == nil)
        #expect(keyring.lockAll().isEmpty)

        // lock --all: the kept keys go too, with nothing more to publish (both were locked).
        #expect(keyring.lockAll(keepingAfterFirstUnlock: false).map(\.name) == ["login", "work"])
        #expect(keyring.opening(kept) == nil)
        #expect(keyring.held(work.id) == nil)
        #expect(fixture.published == ["locked login", "locked work"])
    }

    @Test("a transaction publishes its events once it lands; one that fails publishes none, leaves nothing, and keeps no key")
    func transactions() throws {
        let fixture = try Fixture()
        let keyring = fixture.keyring
        var createdID: Int64 = 0
        #expect(throws: StoreError.self) {
            try keyring.transaction { () throws(StoreError) in
                let (imported, keys) = try fixture.createCollection("imported")
                createdID = imported.id
                _ = try keyring.createItem(in: imported, keys: keys, contents: Fixture.contents("a"))
                #expect(fixture.published.isEmpty)  // held until the transaction lands
                throw StoreError.invalidInput("the import failed half-way")
            }
        }
        #expect(fixture.published.isEmpty)
        #expect(keyring.held(createdID) == nil)
        #expect(try keyring.store.collection(named: "imported") == nil)

        let (imported, item) = try keyring.transaction { () throws(StoreError) in
            let (imported, keys) = try fixture.createCollection("imported")
            return (imported, try keyring.createItem(in: imported, keys: keys, contents: Fixture.contents("a")))
        }
        #expect(fixture.published == ["collection imported", "created imported/\(item.id)"])
        #expect(!keyring.isLocked(imported))
    }
}
