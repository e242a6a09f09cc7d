import DBusValues
import KeychainCore
@testable import SecretService
import Testing

/// org.freedesktop.Secret.Item in this process (``ItemObject``): typed calls through the
/// shared ``TestKeyring``.
@Suite struct ItemObjectTests {
    typealias Names = SecretServiceNames

    @Test("SetSecret replaces the secret and its content type; GetSecret reads it back in the caller's session")
    func secretRoundTrip() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let item = try keyring.createItem(attributes: ["service": "mail"], secret: "first", session: session)
        #expect(try keyring.secret(of: item, session: session) == "first")
        let changed = DBusValue.tuple([.objectPath(session), .bytes(DBusBytes([])), .bytes(DBusBytes(Array("second".utf8))), .string("application/octet-stream")])
        _ = try keyring.call(item, Names.Interface.item, "SetSecret", [changed]).get()
        let reply = try keyring.call(item, Names.Interface.item, "GetSecret", [.objectPath(session)]).get()
        #expect(reply.tuple?.first?.tuple?[2].bytes == DBusBytes(Array("second".utf8)))
        #expect(reply.tuple?.first?.tuple?[3].string == "application/octet-stream")
        // A session that is not the caller's is refused, and the secret stays.
        let bogus = keyring.call(item, Names.Interface.item, "GetSecret", [.objectPath(Names.Path.sessionPrefix + "/s999")])
        #expect(bogus.failure?.dbusName == Names.ErrorName.noSession)
    }

    @Test("Label and Attributes are written through Properties.Set and read back; Type is the schema attribute")
    func labelAndAttributes() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let item = try keyring.createItem(attributes: ["service": "mail", "xdg:schema": "org.example.Mail"], secret: "s", session: session)
        #expect(keyring.setProperty("Label", of: Names.Interface.item, at: item, to: .string("Work mail")) == nil)
        #expect(try keyring.property("Label", of: Names.Interface.item, at: item).get() == .string("Work mail"))
        #expect(try keyring.property("Type", of: Names.Interface.item, at: item).get() == .string("org.example.Mail"))
        #expect(keyring.setProperty("Attributes", of: Names.Interface.item, at: item, to: .stringMap(["service": "imap"])) == nil)
        let attributes = try #require(try keyring.property("Attributes", of: Names.Interface.item, at: item).get().stringMap)
        #expect(attributes["service"] == "imap" && attributes["xdg:schema"] == nil)
        #expect(try keyring.search(["service": "imap"]).unlocked == [item])
        #expect(try keyring.search(["service": "mail"]).unlocked.isEmpty)
        // A label beyond the limit is refused and the old one stays.
        let long = String(repeating: "x", count: KeychainLimits.textSize + 1)
        #expect(keyring.setProperty("Label", of: Names.Interface.item, at: item, to: .string(long))?.dbusName == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(try keyring.property("Label", of: Names.Interface.item, at: item).get() == .string("Work mail"))
    }

    @Test("Delete answers no prompt and the item is gone: not found, not readable")
    func delete() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let item = try keyring.createItem(attributes: ["service": "gone"], secret: "s", session: session)
        let reply = try keyring.call(item, Names.Interface.item, "Delete").get()
        #expect(reply.tuple?.first?.objectPath == Names.Path.none)
        #expect(try keyring.search(["service": "gone"]) == ([], []))
        #expect(keyring.call(item, Names.Interface.item, "GetSecret", [.objectPath(session)]).failure?.dbusName == Names.ErrorName.noSuchObject)
    }

    @Test("a locked item shows Locked, keeps its label and attributes sealed, and refuses its secret")
    func locked() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let item = try keyring.createItem(label: "Bank", attributes: ["service": "bank"], secret: "s", session: session)
        #expect(try keyring.property("Locked", of: Names.Interface.item, at: item).get() == .boolean(false))
        _ = try keyring.call(TestKeyring.service, Names.Interface.service, "Lock", [.objectPaths([TestKeyring.login])]).get()
        #expect(try keyring.property("Locked", of: Names.Interface.item, at: item).get() == .boolean(true))
        #expect(try keyring.property("Label", of: Names.Interface.item, at: item).get() == .string(""))
        #expect(try keyring.property("Attributes", of: Names.Interface.item, at: item).get() == .stringMap([:]))
        #expect(keyring.call(item, Names.Interface.item, "GetSecret", [.objectPath(session)]).failure?.dbusName == Names.ErrorName.isLocked)
        #expect(try keyring.search(["service": "bank"]).locked == [item])
    }
}
