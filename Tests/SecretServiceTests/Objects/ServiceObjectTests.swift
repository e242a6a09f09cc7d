import DBusValues
import KeychainCore
@testable import SecretService
import Testing

/// org.freedesktop.Secret.Service and org.freedesktop.Secret.Session in this process
/// (``ServiceObject``): typed calls through the shared ``TestKeyring``.
@Suite struct ServiceObjectTests {
    typealias Names = SecretServiceNames

    @Test("a session closed with Session.Close no longer decodes or encodes secrets")
    func sessionClose() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let item = try keyring.createItem(attributes: ["service": "s"], secret: "kept", session: session)
        _ = try keyring.call(session, Names.Interface.session, "Close").get()
        #expect(keyring.call(item, Names.Interface.item, "GetSecret", [.objectPath(session)]).failure != nil)
        let fresh = try keyring.openSession()
        #expect(fresh != session)
        #expect(try keyring.secret(of: item, session: fresh) == "kept")
        // An algorithm secretd does not offer.
        let refused = keyring.call(TestKeyring.service, Names.Interface.service, "OpenSession", [.string("rot13"), .variant(.string(""))])
        #expect(refused.failure?.dbusName == "org.freedesktop.DBus.Error.NotSupported")
    }

    @Test("GetSecrets reads many items at once and leaves out the ones it cannot read")
    func getSecrets() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let one = try keyring.createItem(attributes: ["n": "1"], secret: "one", session: session)
        let two = try keyring.createItem(attributes: ["n": "2"], secret: "two", session: session)
        let missing = one + "999"
        let reply = try keyring.call(TestKeyring.service, Names.Interface.service, "GetSecrets",
                                     [.objectPaths([one, two, missing]), .objectPath(session)]).get()
        guard case .dictionary(_, _, let entries)? = reply.tuple?.first else { Issue.record("no dictionary in \(reply)"); return }
        var secrets: [String: String] = [:]
        for entry in entries {
            guard let path = entry.key.objectPath, let bytes = entry.value.tuple?[2].bytes else { continue }
            secrets[path] = String(decoding: bytes.array, as: UTF8.self)
        }
        #expect(secrets == [one: "one", two: "two"])
    }

    @Test("Lock locks the collection and its items search as locked; Unlock of an unlocked one needs no prompt")
    func lockAndUnlock() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let item = try keyring.createItem(attributes: ["service": "lk"], secret: "s", session: session)
        let unlocked = try keyring.call(TestKeyring.service, Names.Interface.service, "Unlock", [.objectPaths([TestKeyring.login])]).get()
        #expect(unlocked.tuple?[0].objectPaths == [TestKeyring.login] && unlocked.tuple?[1].objectPath == Names.Path.none)
        let locked = try keyring.call(TestKeyring.service, Names.Interface.service, "Lock", [.objectPaths([TestKeyring.login])]).get()
        #expect(locked.tuple?[0].objectPaths == [TestKeyring.login])
        #expect(try keyring.search(["service": "lk"]) == ([], [item]))
        #expect(try keyring.property("Locked", of: Names.Interface.collection, at: TestKeyring.login).get() == .boolean(true))
        // Unlocking a locked collection asks through a prompt.
        let asked = try keyring.call(TestKeyring.service, Names.Interface.service, "Unlock", [.objectPaths([TestKeyring.login])]).get()
        #expect(asked.tuple?[0].objectPaths == [])
        #expect(asked.tuple?[1].objectPath?.hasPrefix(Names.Path.promptPrefix) == true)
    }

    @Test("SetAlias points an alias at a collection, ReadAlias reads it, / removes it; bad aliases are refused")
    func aliases() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        #expect(try keyring.call(TestKeyring.service, Names.Interface.service, "ReadAlias", [.string("default")]).get()
            == .tuple([.objectPath(TestKeyring.login)]))
        _ = try keyring.call(TestKeyring.service, Names.Interface.service, "SetAlias", [.string("work"), .objectPath(TestKeyring.login)]).get()
        #expect(try keyring.call(TestKeyring.service, Names.Interface.service, "ReadAlias", [.string("work")]).get()
            == .tuple([.objectPath(TestKeyring.login)]))
        // The alias path reaches the collection.
        #expect(try keyring.property("Label", of: Names.Interface.collection, at: Names.Path.alias("work")).get()
            == keyring.property("Label", of: Names.Interface.collection, at: TestKeyring.login).get())
        _ = try keyring.call(TestKeyring.service, Names.Interface.service, "SetAlias", [.string("work"), .objectPath(Names.Path.none)]).get()
        #expect(try keyring.call(TestKeyring.service, Names.Interface.service, "ReadAlias", [.string("work")]).get()
            == .tuple([.objectPath(Names.Path.none)]))
        for bad in ["session", "with space", String(repeating: "a", count: 65)] {
            let refused = keyring.call(TestKeyring.service, Names.Interface.service, "SetAlias", [.string(bad), .objectPath(TestKeyring.login)])
            #expect(refused.failure?.dbusName == "org.freedesktop.DBus.Error.InvalidArgs", "\(bad)")
        }
    }
}
