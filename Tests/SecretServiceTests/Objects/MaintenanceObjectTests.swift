import DBusValues
import Foundation
import KeychainCore
@testable import SecretService
@testable import SecretStore
import Testing

/// secretd's Maintenance1 interface in this process (``MaintenanceObject``): the store's check
/// through the shared ``TestKeyring``.
@Suite struct MaintenanceObjectTests {
    typealias Names = SecretServiceNames

    /// The login keyring's row of a `Check` reply: opened, not checked, failures (id, reason).
    static func login(_ reply: DBusValue) throws -> (unlocked: Bool, opened: UInt32, notChecked: UInt32, failures: [DBusValue]) {
        let fields = try #require(reply.tuple)
        guard case .array(_, let keyrings) = fields[1] else { throw CheckFailure.shape }
        let row = try #require(keyrings.compactMap(\.tuple).first { $0[0].string == Names.loginCollection })
        guard case .array(_, let failures) = row[5] else { throw CheckFailure.shape }
        return (try #require(row[2].boolean), try #require(row[3].uint32), try #require(row[4].uint32), failures)
    }

    /// SQL that flips the 21st byte of item `?`'s sealed contents (the result cast back to a
    /// blob: `||` makes text). Shared with the tests of real secretd.
    static let flipByte = """
        UPDATE items SET sealed = CAST(substr(sealed, 1, 20)
            || CASE WHEN substr(sealed, 21, 1) = x'ff' THEN x'00' ELSE x'ff' END || substr(sealed, 22) AS BLOB) WHERE id = ?
        """

    /// A reply of another shape than declared.
    enum CheckFailure: Error { case shape }

    @Test("Check of a sound store: the integrity check passes and every item of the login keyring opens")
    func soundStore() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        try keyring.createItem(attributes: ["service": "mail"], secret: "one", session: session)
        try keyring.createItem(attributes: ["service": "chat"], secret: "two", session: session)
        let reply = try keyring.call(TestKeyring.service, Names.Interface.maintenance, "Check").get()
        #expect(reply.tuple?[0] == .array(element: "s", []))
        let login = try Self.login(reply)
        #expect(login.unlocked && login.opened == 2 && login.notChecked == 0 && login.failures.isEmpty)
    }

    @Test("Check names the item whose sealed blob was damaged, by id; a locked keyring's items are not checked")
    func damagedItem() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        try keyring.createItem(attributes: ["service": "mail"], secret: "one", session: session)
        let damaged = try keyring.createItem(attributes: ["service": "chat"], secret: "two", session: session)
        let id = try #require(Int64(damaged.split(separator: "/").last.map(String.init) ?? ""))
        // One byte of the sealed contents flipped, as a bad sector or an edit would.
        try keyring.daemon.store.database.run(Self.flipByte, [.integer(id)])
        _ = keyring.daemon.commitPending()
        let reply = try keyring.call(TestKeyring.service, Names.Interface.maintenance, "Check").get()
        #expect(reply.tuple?[0] == .array(element: "s", []))  // the file itself is sound
        let login = try Self.login(reply)
        #expect(login.opened == 1 && login.failures.count == 1)
        let failure = try #require(login.failures.first?.tuple)
        #expect(failure[0] == .int64(id))
        #expect(failure[1].string?.contains("corrupted") == true)

        _ = try keyring.call(TestKeyring.service, Names.Interface.locking, "LockAll").get()
        let locked = try Self.login(try keyring.call(TestKeyring.service, Names.Interface.maintenance, "Check").get())
        #expect(!locked.unlocked && locked.opened == 0 && locked.notChecked == 2 && locked.failures.isEmpty)
    }
}
