import DBusValues
import Foundation
import KeychainCore
@testable import SecretCrypto
@testable import SecretService
import SecretStore
import Testing

/// One throttle for every password and PIN, whatever the route; the key derivation off the main
/// loop; the login socket's rules for who may create the login keyring and set its password.
/// In this process, on the test's clock (``InProcessDaemonTests/Fixture``).
@Suite struct PasswordCheckTests {
    typealias Fixture = InProcessDaemonTests.Fixture

    static let service = SecretServiceNames.Path.service
    static let login = Fixture.login

    /// Calls `method` of `interface` on the service object as the fixture's client.
    static func call(_ fixture: Fixture, _ interface: String, _ method: String, _ arguments: [DBusValue])
        -> Result<DBusValue, SecretServiceError>
    {
        fixture.call(service, interface, method, arguments)
    }

    static func unlock(_ fixture: Fixture, _ session: String, _ password: String) -> Result<DBusValue, SecretServiceError> {
        call(fixture, Introspection.gnomeExtension, "UnlockWithMasterPassword", [.objectPath(login), Fixture.secret(session, password)])
    }

    static func lock(_ fixture: Fixture) throws {
        _ = try call(fixture, Introspection.service, "Lock", [.objectPaths([login])]).get()
    }

    /// What the login socket answers `request`, sent by `origin`.
    static func socket(_ fixture: Fixture, _ request: LoginControlRequest, _ origin: PasswordChecks.Origin) -> LoginControlResult? {
        var answer: LoginControlResult?
        fixture.daemon.loginKeyring.handle(request, origin: origin) { answer = $0 }
        return answer
    }

    static func bytes(_ text: String) -> SecureBytes { SecureBytes(Array(text.utf8)) }

    @Test("one budget per keyring: a wrong password on any route makes every route wait, the PIN and the socket too; the login from root's PAM stack does not wait")
    func oneBudget() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let session = try fixture.openSession()
        // A PIN, while the password is known.
        _ = try Self.call(fixture, Introspection.quickUnlock, "SetPin", [Fixture.secret(session, "right"), Fixture.secret(session, "1234")]).get()
        try Self.lock(fixture)
        let waiting = SecretServiceError.accessDenied("too many wrong passwords; try again in 1 s")
        #expect(Self.unlock(fixture, session, "guess-1").failure == .accessDenied("the password is wrong"))
        // Every other route now waits, with the right password too.
        #expect(Self.unlock(fixture, session, "right").failure == waiting)
        #expect(Self.call(fixture, Introspection.gnomeExtension, "ChangeWithMasterPassword", [
            .objectPath(Self.login), Fixture.secret(session, "right"), Fixture.secret(session, "chosen"),
        ]).failure == .accessDenied("too many wrong passwords; try again in 1 s"))
        #expect(Self.call(fixture, Introspection.accessGroups, "AddMember", [
            .string("com.example.g"), .string("exe:/usr/bin/x"), Fixture.secret(session, "right"),
        ]).failure == waiting)
        #expect(Self.call(fixture, Introspection.quickUnlock, "SetPin", [Fixture.secret(session, "right"), Fixture.secret(session, "9999")])
                    .failure == waiting)
        #expect(Self.call(fixture, Introspection.quickUnlock, "UnlockWithPin", [Fixture.secret(session, "1234")]).failure
                == .accessDenied("too many wrong PINs or passwords; try again in 1 s"))
        #expect(Self.socket(fixture, .unlock(password: Self.bytes("right")), .client) == .denied)
        #expect(Self.socket(fixture, .change(old: Self.bytes("right"), new: Self.bytes("chosen")), .client) == .denied)
        // A guess through the socket counts as much as one on the bus.
        fixture.clock.now += 1
        #expect(Self.socket(fixture, .unlock(password: Self.bytes("guess-2")), .client) == .denied)
        #expect(Self.unlock(fixture, session, "right").failure == .accessDenied("too many wrong passwords; try again in 2 s"))
        // A wrong PIN too.
        fixture.clock.now += 2
        #expect(Self.call(fixture, Introspection.quickUnlock, "UnlockWithPin", [Fixture.secret(session, "0000")]).failure
                == .accessDenied("the PIN is wrong; 4 tries left"))
        #expect(Self.unlock(fixture, session, "right").failure == .accessDenied("too many wrong passwords; try again in 4 s"))
        // The person's login, from root's PAM stack, neither waits nor counts.
        #expect(Self.socket(fixture, .unlock(password: Self.bytes("right")), .rootLogin) == .ok)
        #expect(!fixture.daemon.keyring.isLocked(try #require(try fixture.daemon.keyring.collection(named: "login"))))
        // The right password ended the wait for everyone.
        try Self.lock(fixture)
        #expect(throws: Never.self) { try Self.unlock(fixture, session, "right").get() }
    }

    @Test("ChangeWithMasterPassword checks the old password through the throttle: guesses wait, and the keyring keeps its password")
    func changeIsThrottled() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let session = try fixture.openSession()
        func change(_ old: String) -> Result<DBusValue, SecretServiceError> {
            Self.call(fixture, Introspection.gnomeExtension, "ChangeWithMasterPassword", [
                .objectPath(Self.login), Fixture.secret(session, old), Fixture.secret(session, "attacker"),
            ])
        }
        #expect(change("guess").failure == .accessDenied("the original password is wrong"))
        for _ in 0..<5 { #expect(change("guess").failure == .accessDenied("too many wrong passwords; try again in 1 s")) }
        try Self.lock(fixture)
        fixture.clock.now += 1
        #expect(throws: Never.self) { try Self.unlock(fixture, session, "right").get() }
        // The right old password changes it (once the wait is over).
        #expect(throws: Never.self) { try change("right").get() }
        try Self.lock(fixture)
        #expect(throws: Never.self) { try Self.unlock(fixture, session, "attacker").get() }
    }

    @Test("the login socket: only root's PAM stack creates the login keyring or sets its password without the old one")
    func socketRules() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let session = try fixture.openSession()
        // A process of the user cannot reset the password, locked or unlocked.
        #expect(Self.socket(fixture, .change(old: Self.bytes(""), new: Self.bytes("chosen")), .client) == .failed)
        try Self.lock(fixture)
        #expect(Self.socket(fixture, .change(old: Self.bytes(""), new: Self.bytes("chosen")), .client) == .failed)
        #expect(Self.unlock(fixture, session, "chosen").failure == .accessDenied("the password is wrong"))
        fixture.clock.now += 1
        #expect(throws: Never.self) { try Self.unlock(fixture, session, "right").get() }
        // Knowing the old password is enough, from anyone.
        #expect(Self.socket(fixture, .change(old: Self.bytes("right"), new: Self.bytes("second")), .client) == .ok)
        // Root's passwd re-wraps an unlocked keyring at once.
        #expect(Self.socket(fixture, .change(old: Self.bytes(""), new: Self.bytes("third")), .rootLogin) == .ok)
        try Self.lock(fixture)
        #expect(throws: Never.self) { try Self.unlock(fixture, session, "third").get() }
        // A locked one keeps opening with its password until it is next unlocked, then takes root's.
        try Self.lock(fixture)
        #expect(Self.socket(fixture, .change(old: Self.bytes(""), new: Self.bytes("fourth")), .rootLogin) == .ok)
        #expect(throws: Never.self) { try Self.unlock(fixture, session, "third").get() }
        try Self.lock(fixture)
        #expect(Self.unlock(fixture, session, "third").failure == .accessDenied("the password is wrong"))
        fixture.clock.now += 1
        #expect(throws: Never.self) { try Self.unlock(fixture, session, "fourth").get() }
    }

    @Test("the login socket: a process of the user cannot create the login keyring; a login (root's PAM stack) does")
    func creation() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("inprocess-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try Provider(options: Daemon.Options(dataDirectory: directory, kdf: .testing), store: Store(directory: directory), clock: { Date() }, offLoop: .inline)
        daemon.serve(on: InProcessDaemonTests.RecordingEndpoint())
        var answer: LoginControlResult?
        daemon.loginKeyring.handle(.unlock(password: Self.bytes("chosen")), origin: .client) { answer = $0 }
        #expect(answer == .failed)
        #expect(try daemon.keyring.collection(named: "login") == nil)
        daemon.loginKeyring.handle(.unlock(password: Self.bytes("login")), origin: .rootLogin) { answer = $0 }
        #expect(answer == .ok)
        #expect(try daemon.keyring.collection(named: "login") != nil)
        #expect(try daemon.keyring.aliases()["default"] == "login")
    }

    @Test("while a password's key is derived, other clients are answered; checks run one at a time, in order")
    func offTheLoop() throws {
        let deferred = DeferredOffLoop()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("inprocess-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = InProcessDaemonTests.ManualClock()
        let daemon = try Provider(
            options: Daemon.Options(dataDirectory: directory, kdf: .testing), store: Store(directory: directory), clock: { clock.now },
            offLoop: deferred.offLoop)
        try daemon.unlockLogin(password: Self.bytes("right"))
        daemon.serve(on: InProcessDaemonTests.RecordingEndpoint())
        func call(_ sender: String, _ interface: String, _ method: String, _ arguments: [DBusValue]) -> Result<DBusValue, SecretServiceError>? {
            var answer: Result<DBusValue, SecretServiceError>?
            let call = MethodCall(sender: sender, path: Self.service, interface: interface, method: method, arguments: arguments)
            if Introspection.interfaces[interface]?.method(method)?.repliesLater == true {
                daemon.router.handle(call) { answer = $0 }
            } else {
                answer = daemon.router.handle(call)
            }
            return answer
        }
        let session = try #require(call(":1.1", Introspection.service, "OpenSession", [.string("plain"), .variant(.string(""))])?
            .success?.tuple?.last?.objectPath)
        _ = call(":1.1", Introspection.service, "Lock", [.objectPaths([Self.login])])
        var first: Result<DBusValue, SecretServiceError>?
        var second: Result<DBusValue, SecretServiceError>?
        daemon.router.handle(MethodCall(sender: ":1.1", path: Self.service, interface: Introspection.gnomeExtension, method: "UnlockWithMasterPassword",
                                 arguments: [.objectPath(Self.login), Fixture.secret(session, "wrong")])) { first = $0 }
        daemon.router.handle(MethodCall(sender: ":1.1", path: Self.service, interface: Introspection.gnomeExtension, method: "UnlockWithMasterPassword",
                                 arguments: [.objectPath(Self.login), Fixture.secret(session, "right")])) { second = $0 }
        // The first derivation is under way and the second waits its turn; another client is served.
        #expect(first == nil && second == nil && deferred.pending.count == 1)
        #expect(call(":1.2", Introspection.service, "ReadAlias", [.string("default")])?.success?.tuple?.first?.objectPath == Self.login)
        deferred.runNext()
        #expect(first?.failure == .accessDenied("the password is wrong"))
        // The second, in its turn, finds the wait the first earned: nothing to derive.
        #expect(second?.failure == .accessDenied("too many wrong passwords; try again in 1 s"))
        #expect(deferred.pending.isEmpty)
    }
}
