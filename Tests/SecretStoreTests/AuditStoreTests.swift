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

    @Test("a write's entries at one time are sealed together in one row and read back in order, beside rows of one entry; a changed byte makes the whole row unreadable, counted once")
    func sealedTogether() throws {
        let (store, _) = try makeStore()
        let (login, keys) = try store.createCollection(name: "login", label: "Login", password: password, parameters: .testing)
        let writer = try store.auditWriter(for: try store.createAuditKey(sealedBy: login, keys: keys))
        let batch = (0..<1_000).map { entry(7_000, .create, label: "item \($0)") }
        try store.appendAudit([entry(6_000, .read)] + batch + [entry(8_000, .delete)], by: writer)
        #expect(try store.auditCount() == 3, "one row for the entries at 7,000, one each for the others")
        let reading = try store.readAudit(since: 0, keys: { _ in keys })
        #expect(reading.entries == [entry(6_000, .read)] + batch + [entry(8_000, .delete)] && reading.unreadable == 0)
        #expect(try store.readAudit(since: 7_000, keys: { _ in keys }).entries.count == 1_001)

        let grouped = try #require(try store.database.rows("SELECT id, sealed FROM audit_entries WHERE time = 7000").first)
        var damaged = try #require(grouped[1].blob)
        damaged[damaged.count / 2] ^= 1
        try store.database.run("UPDATE audit_entries SET sealed = ? WHERE id = ?", [.blob(damaged), grouped[0]])
        let after = try store.readAudit(since: 0, keys: { _ in keys })
        #expect(after.entries == [entry(6_000, .read), entry(8_000, .delete)] && after.unreadable == 1)
    }

    @Test("entries sealed together decode back in order; bytes cut inside an entry, a length past the end or a damaged entry decode to nothing")
    func togetherDecoding() {
        let entries = (0..<3).map { entry(9_000, .create, label: "item \($0)") }
        let bytes = Store.AuditEntry.encoded(together: entries)
        #expect(bytes.withUnsafeBytes { Store.AuditEntry.decoded(together: $0) } == entries)
        #expect(Store.AuditEntry.encoded(together: [entries[0]]) == entries[0].encoded(), "one entry keeps the form every build reads")
        #expect(entries[0].encoded().withUnsafeBytes { Store.AuditEntry.decoded(together: $0) } == [entries[0]])
        // Where each entry ends: after the version byte, each entry's length (LEB128) and bytes.
        var boundaries: [Int: Int] = [1: 0]
        var end = 1
        for (index, one) in entries.enumerated() {
            end += (one.encoded().count < 128 ? 1 : 2) + one.encoded().count
            boundaries[end] = index + 1
        }
        #expect(end == bytes.count)
        for length in 1..<bytes.count {
            let decoded = Array(bytes.prefix(length)).withUnsafeBytes { Store.AuditEntry.decoded(together: $0) }
            #expect(decoded == boundaries[length].map { Array(entries.prefix($0)) }, "cut at \(length)")
        }
        #expect(([2, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01] as [UInt8]).withUnsafeBytes { Store.AuditEntry.decoded(together: $0) } == nil)
        #expect(([2, 3, 9, 9, 9] as [UInt8]).withUnsafeBytes { Store.AuditEntry.decoded(together: $0) } == nil)
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
