import DBusValues
import Foundation
import KeychainCore
@testable import SecretService
@testable import SecretStore
import Testing

/// The audit trail in this process (``AuditTrail``, ``AuditObject``): each kind of event with
/// the caller's identity, pid and command line; the trail sealed while locked and kept across
/// a restart; confined readers refused; `audit-keep` pruning and off.
@Suite struct AuditObjectTests {
    typealias Names = SecretServiceNames

    /// The trail as `Read` returns it from `since` on: each entry's fields, then unreadable, locked.
    static func read(_ keyring: TestKeyring, since: Int64 = 0) throws -> (entries: [[String: DBusValue]], unreadable: UInt32, locked: [String]) {
        let reply = try keyring.call(TestKeyring.service, Names.Interface.audit, "Read", [.int64(since)]).get()
        let fields = try #require(reply.tuple)
        guard case .array(_, let rows) = fields[0] else { throw Shape.wrong }
        return (rows.compactMap(\.variantMap), try #require(fields[1].uint32), try #require(fields[2].strings))
    }

    enum Shape: Error { case wrong }

    /// The event names of `entries`.
    static func events(_ entries: [[String: DBusValue]]) -> [String] { entries.compactMap { $0["event"]?.string } }

    @Test("store, read (GetSecret and GetSecrets), change, delete, lock, refused read, unlock: each recorded with who asked and what")
    func everyKind() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let path = try keyring.createItem(attributes: ["service": "mail", "account": "alice"], secret: "s3cret", session: session)
        #expect(try keyring.secret(of: path, session: session) == "s3cret")
        _ = try keyring.call(TestKeyring.service, Names.Interface.service, "GetSecrets", [.objectPaths([path]), .objectPath(session)]).get()
        _ = try keyring.call(path, Names.Interface.item, "SetSecret", [TestKeyring.secret(session, "n3w")]).get()
        _ = try keyring.call(TestKeyring.service, Names.Interface.locking, "LockAll").get()
        let refused = keyring.call(path, Names.Interface.item, "GetSecret", [.objectPath(session)])
        #expect(refused.failure?.dbusName == Names.ErrorName.isLocked)
        keyring.clock.now = keyring.clock.now.addingTimeInterval(1)
        let wrong = keyring.call(TestKeyring.service, Names.Interface.gnomeExtension, "UnlockWithMasterPassword",
                                 [.objectPath(TestKeyring.login), TestKeyring.secret(session, "wrong")])
        #expect(wrong.failure?.dbusName == Names.ErrorName.denied)

        // Locked: the trail is written but cannot be read; it says which keyring to unlock.
        let locked = try Self.read(keyring)
        #expect(locked.entries.isEmpty && locked.unreadable > 0 && locked.locked == [Names.loginCollection])

        keyring.clock.now = keyring.clock.now.addingTimeInterval(2)
        _ = try keyring.call(TestKeyring.service, Names.Interface.gnomeExtension, "UnlockWithMasterPassword",
                             [.objectPath(TestKeyring.login), TestKeyring.secret(session, "right")]).get()
        _ = try keyring.call(path, Names.Interface.item, "Delete").get()
        let trail = try Self.read(keyring)
        #expect(trail.unreadable == 0 && trail.locked.isEmpty)
        // The login keyring made at start (the fixture's), then this test's calls in order.
        #expect(Self.events(trail.entries) == ["create-keyring", "create", "read", "read", "change", "lock", "refused", "refused", "unlock", "delete"])
        let me = "exe:" + (try #require(CallerIdentity.resolve(pid: getpid(), receivedAt: CallerIdentity.ticksSinceBoot()).get().name))
        let byClient = trail.entries.dropFirst()
        for entry in byClient {
            #expect(entry["identity"]?.string == me, "\(entry)")
            #expect(entry["pid"] == .int32(getpid()))
            #expect(entry["command"]?.string?.isEmpty == false)
        }
        #expect(trail.entries[0]["identity"]?.string == "secretd")
        let itemID = try #require(Int64(path.split(separator: "/").last.map(String.init) ?? ""))
        for index in [1, 2, 3, 4, 9] {
            let entry = trail.entries[index]
            #expect(entry["item"] == .int64(itemID) && entry["keyring"]?.string == Names.loginCollection)
            #expect(entry["service"]?.string == "mail" && entry["account"]?.string == "alice", "\(entry)")
        }
        #expect(trail.entries[2]["detail"]?.string == "Item.GetSecret")
        #expect(trail.entries[3]["detail"]?.string == "Service.GetSecrets")
        #expect(trail.entries[6]["detail"]?.string?.hasPrefix("Item.GetSecret: ") == true)
        #expect(trail.entries[6]["item"] == .int64(itemID))
        #expect(trail.entries[7]["detail"]?.string?.contains("the password is wrong") == true)
        // Times never go back, and --since cuts.
        let times = trail.entries.compactMap { entry -> Int64? in if case .int64(let time)? = entry["time"] { time } else { nil } }
        #expect(times == times.sorted() && times.count == trail.entries.count)
        let last = try #require(times.last)
        #expect(Self.events(try Self.read(keyring, since: last).entries).last == "delete")
        // Nothing of it is in the clear in the database.
        let sealed = try keyring.daemon.keyring.store.database.rows("SELECT sealed FROM audit_entries").compactMap { $0.first?.blob }
        #expect(!sealed.isEmpty && sealed.allSatisfy { !String(decoding: $0, as: UTF8.self).contains("alice") })
    }

    @Test("the trail is kept across a restart; entries older than audit-keep go; audit-keep = 0 keeps none and Read says so")
    func keptAndPruned() throws {
        var configuration = Configuration()
        configuration.auditKeepDays = 1
        let keyring = try TestKeyring(configuration: configuration)
        defer { keyring.remove() }
        let session = try keyring.openSession()
        try keyring.createItem(attributes: ["service": "old"], secret: "x", session: session)
        keyring.daemon.audit.stop()
        keyring.daemon.keyring.store.close()

        // An hour later, a new run over the same directory reads the first run's entries.
        let next = try TestKeyring(reopening: keyring, after: 3600, configuration: configuration)
        #expect(Self.events(try Self.read(next).entries) == ["create-keyring", "create", "unlock"])
        next.daemon.audit.stop()
        next.daemon.keyring.store.close()

        // Two days later, past audit-keep: the first write of the new run prunes the old ones.
        let later = try TestKeyring(reopening: next, after: 2 * 86_400, configuration: configuration)
        let session2 = try later.openSession()
        try later.createItem(attributes: ["service": "new"], secret: "y", session: session2)
        let trail = try Self.read(later)
        #expect(Self.events(trail.entries) == ["unlock", "create"], "\(trail.entries)")
        #expect(trail.entries.last?["service"]?.string == "new")

        var off = Configuration()
        off.auditKeepDays = 0
        let silent = try TestKeyring(configuration: off)
        defer { silent.remove() }
        let session3 = try silent.openSession()
        try silent.createItem(attributes: ["service": "mail"], secret: "z", session: session3)
        #expect(try silent.daemon.keyring.store.auditCount() == 0)
        let refused = silent.call(TestKeyring.service, Names.Interface.audit, "Read", [.int64(0)])
        #expect(refused.failure?.dbusName == "org.freedesktop.DBus.Error.NotSupported")
    }

    @Test("a client confined by access-groups.conf may not read the trail, and its attempt is in it")
    func confinedReader() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let me = try CallerIdentity.resolve(pid: getpid(), receivedAt: CallerIdentity.ticksSinceBoot()).get()
        keyring.daemon.policy = try AccessPolicy.parse("""
            [group "tools"]
            member = \(me)
            [app "\(me)"]
            groups = tools
            """, file: "test")
        let refused = keyring.call(TestKeyring.service, Names.Interface.audit, "Read", [.int64(0)])
        #expect(refused.failure?.dbusName == "org.freedesktop.DBus.Error.AccessDenied")
        keyring.daemon.policy = AccessPolicy()
        let trail = try Self.read(keyring)
        let last = try #require(trail.entries.last)
        #expect(last["event"]?.string == "refused" && last["detail"]?.string?.hasPrefix("Audit1.Read") == true, "\(last)")
    }
}
