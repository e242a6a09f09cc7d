import Foundation
import Testing

@testable import SecretCrypto
@testable import SecretStore

/// The audit trail's storage: entries sealed for a public key (written while locked), read
/// back only with the holder keyring's master key, pruned by time.
@Suite struct AuditStoreTests {
    let password = secret("correct horse")

    func entry(_ time: Int64, _ event: Store.AuditEntry.Event, label: String? = nil) -> Store.AuditEntry {
        Store.AuditEntry(
            time: time, event: event, identity: "exe:/usr/bin/secret-tool", pid: 42, command: "secret-tool lookup service mail",
            keyring: "login", itemID: 7, accessGroup: "default", label: label, service: "mail", account: "alice", detail: "Item.GetSecret")
    }

    @Test("entries written with only the public key read back whole with the holder's keys, oldest first, from --since on")
    func roundTrip() throws {
        let (store, _) = try makeStore()
        let (login, keys) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let key = try store.createAuditKey(sealedBy: login, keys: keys)
        #expect(try store.auditKey() == key)
        // A writer needs no secret of the keyring: two runs, each with its own writer.
        try store.appendAudit([entry(1_000, .read, label: "Mail"), entry(2_000, .change)], by: try store.auditWriter(for: key))
        try store.appendAudit([entry(3_000, .delete)], by: try store.auditWriter(for: key))
        let reading = try store.readAudit(since: 0, keys: { $0.id == login.id ? keys : nil })
        #expect(reading.entries == [entry(1_000, .read, label: "Mail"), entry(2_000, .change), entry(3_000, .delete)])
        #expect(reading.unreadable == 0 && reading.lockedKeyrings.isEmpty)
        #expect(try store.readAudit(since: 2_000, keys: { _ in keys }).entries.map(\.time) == [2_000, 3_000])

        // Locked: nothing opens, and the reading says which keyring to unlock.
        let locked = try store.readAudit(since: 0, keys: { _ in nil })
        #expect(locked.entries.isEmpty && locked.unreadable == 3 && locked.lockedKeyrings == ["login"])
        // Only the master key opens the trail: the after-first-unlock key does not.
        #expect(try store.readAudit(since: 0, keys: { _ in keys.withoutMaster }).entries.isEmpty)
        #expect(throws: StoreError.locked) { try store.createAuditKey(sealedBy: login, keys: keys.withoutMaster) }
    }

    @Test("nothing of an entry is in the clear but its time; a changed time or sealed byte makes it unreadable, not wrong")
    func sealed() throws {
        let (store, _) = try makeStore()
        let (login, keys) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let key = try store.createAuditKey(sealedBy: login, keys: keys)
        try store.appendAudit([entry(5_000, .read, label: "Bank PIN")], by: try store.auditWriter(for: key))
        let rows = try store.database.rows("SELECT time, sealed FROM audit_entries")
        let sealedBytes = try #require(rows.first?[1].blob)
        for needle in ["Bank PIN", "secret-tool", "alice", "mail"] {
            #expect(!String(decoding: sealedBytes, as: UTF8.self).contains(needle))
        }
        try store.database.run("UPDATE audit_entries SET time = 6000")
        let moved = try store.readAudit(since: 0, keys: { _ in keys })
        #expect(moved.entries.isEmpty && moved.unreadable == 1)
    }

    @Test("pruning deletes entries older than the cut; deleting the holder keyring deletes its trail")
    func pruneAndCascade() throws {
        let (store, _) = try makeStore()
        let (login, keys) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let writer = try store.auditWriter(for: try store.createAuditKey(sealedBy: login, keys: keys))
        try store.appendAudit([entry(1_000, .read), entry(2_000, .read), entry(3_000, .read)], by: writer)
        #expect(try store.pruneAudit(before: 2_500) == 2)
        #expect(try store.auditCount() == 1)
        try store.deleteCollection(login)
        #expect(try store.auditCount() == 0)
        #expect(try store.auditKey() == nil)
    }

    @Test("the sealed form: every field round-trips, absent ones stay absent, unknown tags are skipped, garbage is refused")
    func encoding() throws {
        let full = entry(1_796_000_000_123, .read, label: "Mäil ✓")
        #expect(full.encoded().withUnsafeBytes { Store.AuditEntry(decoding: $0) } == full)
        let bare = Store.AuditEntry(time: -5, event: .lock, identity: "secretd")
        #expect(bare.encoded().withUnsafeBytes { Store.AuditEntry(decoding: $0) } == bare)
        let long = Store.AuditEntry(time: 1, event: .refused, identity: "x", detail: String(repeating: "é", count: 300))
        #expect(long.encoded().withUnsafeBytes { Store.AuditEntry(decoding: $0) } == long)
        // A field of a later build (tag 99) is skipped.
        let later = bare.encoded() + [99, 3, 1, 2, 3]
        #expect(later.withUnsafeBytes { Store.AuditEntry(decoding: $0) } == bare)
        for garbage: [UInt8] in [[], [2], [1], [1, 1, 8, 0], Array(bare.encoded().dropLast()), [1, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]] {
            #expect(garbage.withUnsafeBytes { Store.AuditEntry(decoding: $0) } == nil, "\(garbage)")
        }
    }
}
