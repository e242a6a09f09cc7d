import DBusValues
import KeychainCore
@testable import SecretService
import Testing

/// org.freedesktop.Secret.Collection in this process (``CollectionObject``): typed calls
/// through the shared ``TestKeyring``.
@Suite struct CollectionObjectTests {
    typealias Names = SecretServiceNames

    @Test("CreateItem with replace keeps one item per attributes (its secret replaced); without, a second one")
    func replace() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let attributes = ["service": "git", "account": "alice"]
        let first = try keyring.createItem(attributes: attributes, secret: "one", session: session)
        let again = try keyring.createItem(attributes: attributes, secret: "two", session: session, replace: true)
        #expect(again == first)
        #expect(try keyring.secret(of: first, session: session) == "two")
        let another = try keyring.createItem(attributes: attributes, secret: "three", session: session, replace: false)
        #expect(another != first)
        #expect(Set(try keyring.search(attributes).unlocked) == [first, another])
    }

    @Test("SearchItems finds by all the attributes given, in this collection; Items lists them")
    func searchAndItems() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let mail = try keyring.createItem(attributes: ["service": "mail", "account": "a"], secret: "s", session: session)
        let web = try keyring.createItem(attributes: ["service": "web", "account": "a"], secret: "s", session: session)
        let found = try keyring.call(TestKeyring.login, Names.Interface.collection, "SearchItems", [.stringMap(["account": "a"])]).get()
        #expect(Set(found.tuple?.first?.objectPaths ?? []) == [mail, web])
        let one = try keyring.call(TestKeyring.login, Names.Interface.collection, "SearchItems", [.stringMap(["account": "a", "service": "web"])]).get()
        #expect(one.tuple?.first?.objectPaths == [web])
        let items = try keyring.property("Items", of: Names.Interface.collection, at: TestKeyring.login).get()
        #expect(Set(items.objectPaths ?? []) == [mail, web])
        // The session collection is another collection: none of these are in it.
        let session0 = Names.Path.collection(Names.sessionCollection)
        let none = try keyring.call(session0, Names.Interface.collection, "SearchItems", [.stringMap(["account": "a"])]).get()
        #expect(none.tuple?.first?.objectPaths == [])
    }

    @Test("Label is written and read; the session collection cannot be deleted; a deleted collection's items go with it")
    func labelAndDelete() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        #expect(keyring.setProperty("Label", of: Names.Interface.collection, at: TestKeyring.login, to: .string("Mine")) == nil)
        #expect(try keyring.property("Label", of: Names.Interface.collection, at: TestKeyring.login).get() == .string("Mine"))
        let sessionCollection = Names.Path.collection(Names.sessionCollection)
        let refused = keyring.call(sessionCollection, Names.Interface.collection, "Delete")
        #expect(refused.failure?.dbusName == "org.freedesktop.DBus.Error.InvalidArgs")
        let item = try keyring.createItem(attributes: ["service": "x"], secret: "s", session: session)
        let deleted = try keyring.call(TestKeyring.login, Names.Interface.collection, "Delete").get()
        #expect(deleted.tuple?.first?.objectPath == Names.Path.none)
        #expect(try keyring.search(["service": "x"]) == ([], []))
        #expect(keyring.call(item, Names.Interface.item, "GetSecret", [.objectPath(session)]).failure?.dbusName == Names.ErrorName.noSuchObject)
        #expect(keyring.endpoint.signals.contains { $0.name == "CollectionDeleted" && $0.arguments == [.objectPath(TestKeyring.login)] })
    }
}
