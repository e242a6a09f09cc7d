import DBusValues
import Foundation
import KeychainCore
@testable import SecretService
import Testing

/// secretd's own interfaces in this process (``AccessGroupsObject``, ``QuickUnlockObject``, the
/// GNOME extension and Locking1 of ``ServiceObject``): typed calls through the shared
/// ``TestKeyring``.
@Suite struct SecretdInterfacesTests {
    typealias Names = SecretServiceNames

    @Test("WhoAmI names this process as an unconfined exe: client of the default group")
    func whoAmI() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let reply = try keyring.call(TestKeyring.service, Names.Interface.accessGroups, "WhoAmI").get()
        let fields = try #require(reply.tuple)
        #expect(fields[0].string?.hasPrefix("exe:") == true)
        #expect(fields[2].string == AccessGroupNames.defaultGroup)
        #expect(fields[3] == .boolean(false))
    }

    @Test("a PIN set with the login password unlocks the locked login keyring; a wrong one costs a try")
    func pin() throws {
        let keyring = try TestKeyring(password: "right")
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let wrongPassword = keyring.call(TestKeyring.service, Names.Interface.quickUnlock, "SetPin",
                                         [TestKeyring.secret(session, "wrong"), TestKeyring.secret(session, "4711")])
        #expect(wrongPassword.failure?.dbusName == Names.ErrorName.denied)
        keyring.clock.now = keyring.clock.now.addingTimeInterval(2)  // past the wait after a wrong password (the throttle's clock is the test's)
        _ = try keyring.call(TestKeyring.service, Names.Interface.quickUnlock, "SetPin",
                             [TestKeyring.secret(session, "right"), TestKeyring.secret(session, "4711")]).get()
        let status = try keyring.call(TestKeyring.service, Names.Interface.quickUnlock, "GetPinStatus").get()
        let tries = try #require(status.tuple?[1].uint32)
        #expect(status.tuple?[0] == .boolean(true) && tries > 1)
        _ = try keyring.call(TestKeyring.service, Names.Interface.locking, "LockAll").get()
        #expect(try keyring.property("Locked", of: Names.Interface.collection, at: TestKeyring.login).get() == .boolean(true))
        let wrongPIN = keyring.call(TestKeyring.service, Names.Interface.quickUnlock, "UnlockWithPin", [TestKeyring.secret(session, "0000")])
        #expect(wrongPIN.failure != nil)
        keyring.clock.now = keyring.clock.now.addingTimeInterval(2)
        let after = try keyring.call(TestKeyring.service, Names.Interface.quickUnlock, "GetPinStatus").get()
        #expect(after.tuple?[1].uint32 == tries - 1)
        _ = try keyring.call(TestKeyring.service, Names.Interface.quickUnlock, "UnlockWithPin", [TestKeyring.secret(session, "4711")]).get()
        #expect(try keyring.property("Locked", of: Names.Interface.collection, at: TestKeyring.login).get() == .boolean(false))
    }

    @Test("CreateWithMasterPassword makes an unlocked keyring; UnlockWithMasterPassword opens it again after a lock")
    func masterPassword() throws {
        let keyring = try TestKeyring()
        defer { keyring.remove() }
        let session = try keyring.openSession()
        let created = try keyring.call(TestKeyring.service, Names.Interface.gnomeExtension, "CreateWithMasterPassword", [
            .properties([Names.Property.collectionLabel: .string("Work")]), TestKeyring.secret(session, "work-pw"),
        ]).get()
        let path = try #require(created.tuple?.first?.objectPath)
        #expect(try keyring.property("Label", of: Names.Interface.collection, at: path).get() == .string("Work"))
        #expect(try keyring.property("Locked", of: Names.Interface.collection, at: path).get() == .boolean(false))
        _ = try keyring.call(TestKeyring.service, Names.Interface.service, "Lock", [.objectPaths([path])]).get()
        let wrong = keyring.call(TestKeyring.service, Names.Interface.gnomeExtension, "UnlockWithMasterPassword",
                                 [.objectPath(path), TestKeyring.secret(session, "nope")])
        #expect(wrong.failure?.dbusName == Names.ErrorName.denied)
        keyring.clock.now = keyring.clock.now.addingTimeInterval(2)
        _ = try keyring.call(TestKeyring.service, Names.Interface.gnomeExtension, "UnlockWithMasterPassword",
                             [.objectPath(path), TestKeyring.secret(session, "work-pw")]).get()
        #expect(try keyring.property("Locked", of: Names.Interface.collection, at: path).get() == .boolean(false))
    }
}
