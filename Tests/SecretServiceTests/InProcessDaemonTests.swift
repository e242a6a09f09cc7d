import DBusValues
import Foundation
import KeychainCore
@testable import SecretCrypto
@testable import SecretService
import SecretStore
import Testing

/// The daemon's request-to-reply behaviour in this process: calls go straight to its handlers,
/// signals to a recording endpoint, and the waits after wrong passwords run on a clock the
/// test moves, so nothing here sleeps or depends on the machine's speed.
@Suite struct InProcessDaemonTests {
    /// A bus endpoint that records what the daemon sends and says every caller is this
    /// process (so callers are unconfined `exe:` clients of this user).
    final class RecordingEndpoint: BusEndpoint {
        struct Signal: Equatable {
            var path: String
            var interface: String
            var name: String
            var arguments: [DBusValue]
            var destination: String?
        }
        var signals: [Signal] = []

        func emitSignal(path: String, interface: String, name: String, arguments: [DBusValue], destination: String?) -> Bool {
            signals.append(Signal(path: path, interface: interface, name: name, arguments: arguments, destination: destination))
            return false
        }

        func emitPropertiesChanged(
            path: String, interface: String, changed: [String: DBusValue], invalidated: [String], destination: String?
        ) {
            signals.append(Signal(
                path: path, interface: SecretServiceNames.Interface.properties, name: "PropertiesChanged",
                arguments: [.string(interface), .properties(changed), .strings(invalidated)], destination: destination))
        }

        func credentials(of sender: String) -> (uid: UInt32, pid: UInt32?)? { (getuid(), UInt32(getpid())) }

        func credentials(of sender: String, completion: @escaping ((uid: UInt32, pid: UInt32?)?) -> Void) {
            completion(credentials(of: sender))
        }

        /// The `Locked` values announced for `path`, in order.
        func lockedAnnouncements(_ path: String) -> [Bool] {
            signals.compactMap { signal in
                guard signal.path == path, signal.name == "PropertiesChanged",
                    case .dictionary(_, _, let entries)? = signal.arguments.dropFirst().first,
                    let entry = entries.first(where: { $0.key == .string("Locked") }), case .variant(.boolean(let locked)) = entry.value
                else { return nil }
                return locked
            }
        }
    }

    /// A clock the test moves by hand.
    final class ManualClock: @unchecked Sendable {
        var now = Date(timeIntervalSince1970: 1_000_000)
    }

    /// A daemon over a fresh data directory, its login keyring created with `password`.
    struct Fixture {
        let daemon: Provider
        let endpoint = RecordingEndpoint()
        let clock: ManualClock
        let directory: URL
        static let client = ":1.42"
        static let service = SecretServiceNames.Path.service
        static let login = SecretServiceNames.Path.collection("login")

        init(password: String = "right", configuration: Configuration = Configuration()) throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("inprocess-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try self.init(directory: directory, clock: ManualClock(), password: password, configuration: configuration)
        }

        /// A new daemon over `earlier`'s data directory (whose store the test closed), `seconds`
        /// later on its clock: a restart.
        init(reopening earlier: Fixture, after seconds: TimeInterval, password: String = "right", configuration: Configuration = Configuration()) throws {
            earlier.clock.now = earlier.clock.now.addingTimeInterval(seconds)
            try self.init(directory: earlier.directory, clock: earlier.clock, password: password, configuration: configuration)
        }

        private init(directory: URL, clock: ManualClock, password: String, configuration: Configuration) throws {
            self.directory = directory
            self.clock = clock
            daemon = try Provider(
                options: Daemon.Options(dataDirectory: directory, kdf: .testing, configuration: configuration),
                store: Store(directory: directory), clock: { clock.now }, offLoop: .inline)
            try daemon.unlockLogin(password: SecureBytes(Array(password.utf8)))
            daemon.serve(on: endpoint)
        }

        /// Calls `method` as the test client; commits what it wrote, as the server does before replying.
        func call(_ path: String, _ interface: String, _ method: String, _ arguments: [DBusValue] = [])
            -> Result<DBusValue, SecretServiceError>
        {
            let result = Self.call(daemon, MethodCall(sender: Self.client, path: path, interface: interface, method: method, arguments: arguments))
            _ = daemon.commitPending()
            return result
        }

        /// Calls `call` as the bus server would: through ``CallRouter/handle(_:replyLater:)`` when its
        /// method is declared to reply later (derivations run in place here, so it answers at once).
        static func call(_ daemon: Provider, _ call: MethodCall) -> Result<DBusValue, SecretServiceError> {
            guard Introspection.interfaces[call.interface]?.method(call.method)?.repliesLater == true else { return daemon.router.handle(call) }
            var answer: Result<DBusValue, SecretServiceError>?
            daemon.router.handle(call) { answer = $0 }
            return answer ?? .failure(.failed("no answer in place"))
        }

        /// Opens a plain session.
        func openSession() throws -> String {
            let reply = try call(Self.service, SecretServiceNames.Interface.service, "OpenSession", [.string("plain"), .variant(.string(""))]).get()
            return try #require(reply.tuple?.last?.objectPath)
        }

        /// A plain secret of `session`.
        static func secret(_ session: String, _ value: String) -> DBusValue {
            .tuple([.objectPath(session), .bytes(DBusBytes([])), .bytes(DBusBytes(Array(value.utf8))), .string("text/plain")])
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    @Test("store, search and read back through the handlers; ItemCreated goes out once, once the client reads the collection")
    func storeAndRead() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let session = try fixture.openSession()
        func create(_ account: String) throws -> String {
            let created = try fixture.call(Fixture.login, SecretServiceNames.Interface.collection, "CreateItem", [
                .properties([SecretServiceNames.Property.itemLabel: .string("Mail"),
                             SecretServiceNames.Property.itemAttributes: .stringMap(["service": "mail", "account": account])]),
                Fixture.secret(session, "s3cret"), .boolean(true),
            ]).get()
            return try #require(created.tuple?.first?.objectPath)
        }
        // A client that only stores (libsecret's one-call API) is told nothing about items.
        _ = try create("bob")
        #expect(fixture.endpoint.signals.filter { $0.name == "ItemCreated" }.isEmpty)
        // Reading a collection's property (what the bus server asks the daemon for a Get).
        #expect(throws: Never.self) {
            try fixture.daemon.router.property("Label", interface: SecretServiceNames.Interface.collection, path: Fixture.login,
                                        sender: Fixture.client).get()
        }
        let attributes = DBusValue.stringMap(["service": "mail", "account": "alice"])
        let item = try create("alice")
        #expect(fixture.endpoint.signals.filter { $0.name == "ItemCreated" }.map(\.arguments) == [[.objectPath(item)]])
        let found = try fixture.call(Fixture.service, SecretServiceNames.Interface.service, "SearchItems", [attributes]).get()
        #expect(found.tuple?.first?.objectPaths == [item])
        let secret = try fixture.call(item, SecretServiceNames.Interface.item, "GetSecret", [.objectPath(session)]).get()
        #expect(secret.tuple?.first?.tuple?[2].bytes == DBusBytes(Array("s3cret".utf8)))
        // Another client's session is not ours to use.
        let stranger = fixture.daemon.router.handle(MethodCall(
            sender: ":1.43", path: item, interface: SecretServiceNames.Interface.item, method: "GetSecret", arguments: [.objectPath(session)]))
        #expect(stranger.failure?.dbusName == SecretServiceNames.ErrorName.noSession)
    }

    @Test("Lock and a password unlock are each announced once, by the one place that holds the keys")
    func lockAnnouncements() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let session = try fixture.openSession()
        _ = try fixture.call(Fixture.service, SecretServiceNames.Interface.service, "Lock", [.objectPaths([Fixture.login])]).get()
        _ = try fixture.call(Fixture.service, SecretServiceNames.Interface.service, "Lock", [.objectPaths([Fixture.login])]).get()
        _ = try fixture.call(Fixture.service, SecretServiceNames.Interface.gnomeExtension, "UnlockWithMasterPassword", [
            .objectPath(Fixture.login), Fixture.secret(session, "right"),
        ]).get()
        #expect(fixture.endpoint.lockedAnnouncements(Fixture.login) == [true, false])
        fixture.daemon.lockAll(reason: "in a test")
        #expect(fixture.endpoint.lockedAnnouncements(Fixture.login) == [true, false, true])
    }

    @Test("a wrong password waits 1 s, then 2 s, on the test's clock; the right one then unlocks")
    func wrongPasswordWaits() throws {
        let fixture = try Fixture()
        defer { fixture.remove() }
        let session = try fixture.openSession()
        _ = try fixture.call(Fixture.service, SecretServiceNames.Interface.service, "Lock", [.objectPaths([Fixture.login])]).get()
        func unlock(_ password: String) -> Result<DBusValue, SecretServiceError> {
            fixture.call(Fixture.service, SecretServiceNames.Interface.gnomeExtension, "UnlockWithMasterPassword", [
                .objectPath(Fixture.login), Fixture.secret(session, password),
            ])
        }
        #expect(unlock("wrong").failure == .accessDenied("the password is wrong"))
        // Even the right password waits its turn.
        #expect(unlock("right").failure == .accessDenied("too many wrong passwords; try again in 1 s"))
        fixture.clock.now += 1
        #expect(unlock("wrong").failure == .accessDenied("the password is wrong"))
        fixture.clock.now += 1.5
        #expect(unlock("right").failure == .accessDenied("too many wrong passwords; try again in 1 s"))
        fixture.clock.now += 0.5
        #expect(throws: Never.self) { try unlock("right").get() }
        #expect(fixture.endpoint.lockedAnnouncements(Fixture.login) == [true, false])
    }

    @Test("lock-after-idle counts from the last call or login, on the daemon's clock")
    func idleLock() throws {
        var configuration = Configuration()
        configuration.lockAfterIdle = 3
        let fixture = try Fixture(configuration: configuration)
        defer { fixture.remove() }
        func locked() -> Bool { fixture.endpoint.lockedAnnouncements(Fixture.login).last == true }
        fixture.clock.now += 2.9
        fixture.daemon.lockIfIdle()
        #expect(!locked())
        // A call is activity: the 3 s start again from it.
        _ = try fixture.openSession()
        fixture.clock.now += 2.9
        fixture.daemon.lockIfIdle()
        #expect(!locked())
        fixture.clock.now += 0.1
        fixture.daemon.lockIfIdle()
        #expect(fixture.endpoint.lockedAnnouncements(Fixture.login) == [true])
        // A login unlocks it, and counts as activity too: it does not lock again at once.
        var answer: LoginControlResult?
        fixture.daemon.loginKeyring.handle(.unlock(password: SecureBytes(Array("right".utf8))), origin: .rootLogin) { answer = $0 }
        #expect(answer == .ok)
        #expect(fixture.endpoint.lockedAnnouncements(Fixture.login) == [true, false])
        fixture.clock.now += 1.5
        fixture.daemon.lockIfIdle()
        #expect(!locked())
        fixture.clock.now += 1.5
        fixture.daemon.lockIfIdle()
        #expect(fixture.endpoint.lockedAnnouncements(Fixture.login) == [true, false, true])
    }

    @Test("prompts: at most the limit per client, numbered on, and a client's all closed when it leaves")
    func promptLimit() {
        let registry = PromptRegistry(limit: 2)
        func add(_ owner: String) -> Result<String, SecretServiceError> {
            registry.add(Prompt(owner: owner, action: .createCollection(label: "x", alias: "")))
        }
        #expect(add("a").success == ObjectPaths.prompt(1))
        #expect(add("a").success == ObjectPaths.prompt(2))
        #expect(add("a").failure?.dbusName == SecretServiceError.limitsExceeded("").dbusName)
        #expect(add("b").success == ObjectPaths.prompt(3))
        registry.remove(1)
        #expect(add("a").success == ObjectPaths.prompt(4))  // numbers are never reused
        #expect(registry.removeAll(of: "a").map(\.id).sorted() == [2, 4])
        #expect(registry.ids == [3] && registry[3]?.owner == "b" && registry[2] == nil)
    }

    @Test("callers: the bus is asked once per client, calls that wait for it all run, other users are refused")
    func callerIdentification() {
        final class Endpoint: BusEndpoint {
            var uid = getuid()
            var asked: [String] = []
            var answer: (() -> Void)?
            func emitSignal(path: String, interface: String, name: String, arguments: [DBusValue], destination: String?) -> Bool { false }
            func emitPropertiesChanged(
                path: String, interface: String, changed: [String: DBusValue], invalidated: [String], destination: String?
            ) {}
            func credentials(of sender: String) -> (uid: UInt32, pid: UInt32?)? { (uid, UInt32(getpid())) }
            func credentials(of sender: String, completion: @escaping ((uid: UInt32, pid: UInt32?)?) -> Void) {
                asked.append(sender)
                let credentials = self.credentials(of: sender)
                answer = { completion(credentials) }  // answered when the test says so
            }
        }
        let endpoint = Endpoint()
        let registry = CallerRegistry()
        var refusals: [SecretServiceError?] = []
        #expect(registry.identify(":1.7", on: endpoint) { refusals.append($0) })
        #expect(registry.identify(":1.7", on: endpoint) { refusals.append($0) })
        #expect(endpoint.asked == [":1.7"] && refusals.isEmpty)
        endpoint.answer?()
        #expect(refusals.count == 2 && refusals.allSatisfy { $0 == nil })
        #expect(registry[":1.7"]?.pid == getpid())
        #expect(!registry.identify(":1.7", on: endpoint) { _ in Issue.record("an identified caller waited") })
        endpoint.uid = getuid() + 1
        #expect(registry.caller(":1.8", on: endpoint).failure == .forbidden("secretd serves only its own user"))
        #expect(registry[":1.8"] == nil)
        registry.forget(":1.7")
        #expect(registry[":1.7"] == nil)
    }

    @Test("the throttle doubles a keyring's wait up to 60 s, keyrings apart, and the right password clears it")
    func throttle() {
        let clock = ManualClock()
        var throttle = PasswordThrottle(now: { clock.now })
        var waits: [TimeInterval] = []
        for _ in 0..<8 {
            _ = throttle.failed(1)
            waits.append(throttle.wait(for: 1))
        }
        #expect(waits == [1, 2, 4, 8, 16, 32, 60, 60])
        #expect(throttle.wait(for: 2) == 0)  // another keyring has its own budget
        clock.now += 30
        #expect(throttle.wait(for: 1) == 30)
        throttle.succeeded(1)
        #expect(throttle.wait(for: 1) == 0)
    }

    @Test("a client at its session limit loses its least recently used session, not another client's")
    func sessionLimit() throws {
        let registry = SessionRegistry(limit: 3)
        func open(_ owner: String) throws -> Int {
            let path = registry.add(try Session.open(algorithm: "plain", input: .string(""), owner: owner).get().0)
            return try #require(Int(path.split(separator: "s").last ?? ""))
        }
        let first = try open("a"), second = try open("a"), third = try open("a")
        let other = try open("b")
        _ = registry.session(first, of: "a")  // used: the second is now the least recently used
        let fourth = try open("a")
        #expect(registry.contains(first, of: "a") && !registry.contains(second, of: "a"))
        #expect(registry.contains(third, of: "a") && registry.contains(fourth, of: "a"))
        #expect(registry.contains(other, of: "b") && registry.count(of: "a") == 3)
        #expect(registry.session(other, of: "a") == nil)
        registry.forget("a")
        #expect(registry.count(of: "a") == 0 && registry.ids == [other])
    }
}

extension Result {
    /// The error, if it failed.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }

    /// The value, if it succeeded.
    var success: Success? { try? get() }
}

extension Provider {
    /// A router for this provider's objects, as the bus server has (stateless: one per use).
    var router: CallRouter { CallRouter(provider: self) }
}
