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
        try keyring.daemon.keyring.store.database.run(Self.flipByte, [.integer(id)])
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

    @Test("Backup writes a 0600 copy that verifies item by item; an existing file is refused unless replaced; a tampered or truncated copy fails verification")
    func backup() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        try keyring.createItem(attributes: ["service": "mail"], secret: "one", session: session)
        try keyring.createItem(attributes: ["service": "chat"], secret: "two", session: session)
        let path = keyring.directory.appendingPathComponent("backup.sqlite3").path
        let reply = try keyring.call(TestKeyring.service, Names.Interface.maintenance, "Backup", [.string(path), .boolean(false)]).get()
        let fields = try #require(reply.tuple)
        #expect(fields[1] == .uint32(2) && fields[2] == .uint32(0), "\(fields)")  // both login items opened in the copy
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // No temporary file left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: keyring.directory.path).filter { $0.hasPrefix(".backup") }.isEmpty)

        let again = keyring.call(TestKeyring.service, Names.Interface.maintenance, "Backup", [.string(path), .boolean(false)])
        #expect(again.failure?.dbusName == "org.freedesktop.DBus.Error.InvalidArgs")
        let relative = keyring.call(TestKeyring.service, Names.Interface.maintenance, "Backup", [.string("backup.sqlite3"), .boolean(true)])
        #expect(relative.failure != nil)
        _ = try keyring.call(TestKeyring.service, Names.Interface.maintenance, "Backup", [.string(path), .boolean(true)]).get()

        // The copy verifies with the keys held; damaged, it does not.
        let live = try keyring.daemon.keyring.collections()
        let keys = { (copy: Store.CollectionRecord) in
            live.first { $0.id == copy.id && $0.uuid == copy.uuid }.flatMap { keyring.daemon.keyring.held($0.id) }
        }
        #expect(try Store.verifyBackup(at: path, keys: keys).opened == 2)
        let tampered = keyring.directory.appendingPathComponent("tampered.sqlite3").path
        try FileManager.default.copyItem(atPath: path, toPath: tampered)
        let copy = try Database(path: tampered)
        let id = try #require(try copy.rows("SELECT max(id) FROM items").first?.first?.integer)
        try copy.run(Self.flipByte, [.integer(id)])
        copy.close()
        #expect(throws: StoreError.self) { try Store.verifyBackup(at: tampered, keys: keys) }
        let truncated = keyring.directory.appendingPathComponent("truncated.sqlite3").path
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: truncated))
        #expect(throws: StoreError.self) { try Store.verifyBackup(at: truncated, keys: keys) }
    }
}
