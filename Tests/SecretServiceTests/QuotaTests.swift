import DBusValues
import Foundation
import KeychainCore
import KeychainTestSupport
@testable import SecretCrypto
@testable import SecretService
import SecretStore
import Testing

/// The quotas of secretd.conf (`quota-items`, `quota-bytes`, `quota-database`) and the bound on
/// an item's attribute bytes: a write past one is refused with `LimitsExceeded` and leaves
/// nothing behind; other programs are not held to another's quota.
@Suite struct QuotaTests {
    typealias Fixture = InProcessDaemonTests.Fixture
    static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"

    /// Two programs, identified as themselves.
    static let first = (sender: ":1.200", identity: CallerIdentity(kind: .exe, name: "/usr/bin/first"))
    static let second = (sender: ":1.201", identity: CallerIdentity(kind: .exe, name: "/usr/bin/second"))

    /// A daemon with these quotas and the two programs identified, each with a plain session.
    static func fixture(_ quota: Store.Quota) throws -> (Fixture, [String: String]) {
        var configuration = Configuration()
        configuration.quota = quota
        let fixture = try Fixture(configuration: configuration)
        var sessions: [String: String] = [:]
        for program in [first, second] {
            fixture.daemon.callers.add(Caller(identity: program.identity, pid: getpid()), as: program.sender)
            let opened = Fixture.call(fixture.daemon, MethodCall(
                sender: program.sender, path: SecretServiceNames.Path.service, interface: Introspection.service,
                method: "OpenSession", arguments: [.string("plain"), .variant(.string(""))]))
            sessions[program.sender] = try #require(try opened.get().tuple?.last?.objectPath)
        }
        return (fixture, sessions)
    }

    static func create(
        _ fixture: Fixture, as sender: String, session sessions: [String: String], account: String, secret: String,
        attributes: [String: String] = [:]
    ) -> Result<DBusValue, SecretServiceError> {
        let session = sessions[sender] ?? "/"
        let call = MethodCall(
            sender: sender, path: Fixture.login, interface: Introspection.collection, method: "CreateItem",
            arguments: [
                .properties([
                    SecretServiceNames.Property.itemLabel: .string(account),
                    SecretServiceNames.Property.itemAttributes: .stringMap(["service": "quota", "account": account].merging(attributes) { $1 }),
                ]),
                Fixture.secret(session, secret), .boolean(false),
            ])
        let result = Fixture.call(fixture.daemon, call)
        _ = fixture.daemon.commitPending()
        return result
    }

    static func itemCount(_ fixture: Fixture) throws -> Int {
        try fixture.daemon.keyring.search(["service": "quota"], in: nil).count
    }

    @Test("quota-items: a program's item past its quota is refused and not written; another program may still store; a delete makes room")
    func items() throws {
        let (fixture, session) = try Self.fixture(Store.Quota(items: 3, bytes: 1 << 30, databaseBytes: 1 << 40))
        defer { fixture.remove() }
        var paths: [String] = []
        for n in 0..<3 {
            paths.append(try #require(try Self.create(fixture, as: Self.first.sender, session: session, account: "a\(n)", secret: "s")
                .get().tuple?.first?.objectPath))
        }
        let refused = Self.create(fixture, as: Self.first.sender, session: session, account: "a3", secret: "s")
        #expect(refused.failure?.dbusName == Self.limitsExceeded)
        #expect(refused.failure?.message.contains("quota-items = 3") == true, "\(String(describing: refused.failure))")
        #expect(try Self.itemCount(fixture) == 3)
        #expect(try fixture.daemon.keyring.store.usage(of: Self.first.identity.description).items == 3)
        #expect(throws: Never.self) { try Self.create(fixture, as: Self.second.sender, session: session, account: "b0", secret: "s").get() }
        // A delete (by anyone who may) gives the creator its room back.
        let deleted = Fixture.call(fixture.daemon, MethodCall(
            sender: Self.second.sender, path: paths[0], interface: Introspection.item, method: "Delete", arguments: []))
        _ = fixture.daemon.commitPending()
        #expect(throws: Never.self) { try deleted.get() }
        #expect(try fixture.daemon.keyring.store.usage(of: Self.first.identity.description).items == 2)
        #expect(throws: Never.self) { try Self.create(fixture, as: Self.first.sender, session: session, account: "a4", secret: "s").get() }
    }

    @Test("quota-bytes: a new item or a larger secret past the program's bytes is refused, and the item keeps its secret")
    func bytes() throws {
        let (fixture, session) = try Self.fixture(Store.Quota(items: 1000, bytes: 8192, databaseBytes: 1 << 40))
        defer { fixture.remove() }
        let path = try #require(try Self.create(fixture, as: Self.first.sender, session: session, account: "a", secret: String(repeating: "x", count: 3000))
            .get().tuple?.first?.objectPath)
        #expect(Self.create(fixture, as: Self.first.sender, session: session, account: "b", secret: String(repeating: "y", count: 6000))
            .failure?.dbusName == Self.limitsExceeded)
        #expect(try Self.itemCount(fixture) == 1)
        // Growing the item past it, by anyone: the creator's quota counts.
        let grown = Fixture.call(fixture.daemon, MethodCall(
            sender: Self.second.sender, path: path, interface: Introspection.item, method: "SetSecret",
            arguments: [Fixture.secret(session[Self.second.sender]!, String(repeating: "z", count: 9000))]))
        _ = fixture.daemon.commitPending()
        #expect(grown.failure?.dbusName == Self.limitsExceeded)
        let read = Fixture.call(fixture.daemon, MethodCall(
            sender: Self.first.sender, path: path, interface: Introspection.item, method: "GetSecret",
            arguments: [.objectPath(session[Self.first.sender]!)]))
        #expect(read.success?.tuple?.first?.tuple?[2].bytes == DBusBytes(Array(String(repeating: "x", count: 3000).utf8)))
    }

    @Test("quota-database: a write that would grow the file past it is refused")
    func database() throws {
        let (probe, _) = try Self.fixture(Store.Quota(items: 1000, bytes: 1 << 30, databaseBytes: 1 << 40))
        let size = try probe.daemon.keyring.store.databaseSize()
        probe.remove()
        let (fixture, sessions) = try Self.fixture(Store.Quota(items: 1000, bytes: 1 << 30, databaseBytes: size + 16 * 1024))
        defer { fixture.remove() }
        var stored = 0
        var refusal: SecretServiceError?
        while refusal == nil && stored < 100 {
            switch Self.create(fixture, as: Self.first.sender, session: sessions, account: "a\(stored)", secret: String(repeating: "x", count: 8000)) {
            case .success: stored += 1
            case .failure(let error): refusal = error
            }
        }
        #expect(refusal?.dbusName == Self.limitsExceeded && refusal?.message.contains("quota-database") == true, "\(String(describing: refusal))")
        #expect(stored > 0 && stored < 100)
        #expect(try Self.itemCount(fixture) == stored)
    }

    @Test("an item's attributes may take 64 KiB, names and values together; more is InvalidArgs and nothing is written")
    func attributeBytes() throws {
        let (fixture, session) = try Self.fixture(Store.Quota(items: 1000, bytes: 1 << 30, databaseBytes: 1 << 40))
        defer { fixture.remove() }
        var attributes: [String: String] = [:]
        for n in 0..<16 { attributes[String(format: "a%02d", n)] = String(repeating: "v", count: 4000) }
        #expect(throws: Never.self) {
            try Self.create(fixture, as: Self.first.sender, session: session, account: "fits", secret: "s", attributes: attributes).get()
        }
        attributes["a16"] = String(repeating: "v", count: 4000)
        let refused = Self.create(fixture, as: Self.first.sender, session: session, account: "too-many", secret: "s", attributes: attributes)
        #expect(refused.failure?.dbusName == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(try Self.itemCount(fixture) == 1)
    }

    @Test("secretd.conf: quota-items, quota-bytes and quota-database, with K, M and G; nonsense is an error with its line")
    func configuration() throws {
        let parsed = try Configuration.parse("quota-items = 10\nquota-bytes = 512M\nquota-database = 2G\n", file: "f")
        #expect(parsed.quota == Store.Quota(items: 10, bytes: 512 << 20, databaseBytes: 2 << 30))
        #expect(Configuration().quota == Store.Quota(items: 200_000, bytes: 1 << 30, databaseBytes: 4 << 30))
        for bad in ["quota-items = 0", "quota-items = many", "quota-bytes = 12T", "quota-database = -1", "quota-bytes = 99999999999999999G"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try Configuration.parse("# x\n" + bad + "\n", file: "f") }
        }
        #expect(Configuration.size("64K") == 65536)
    }

    @Test("over the bus: a writer past its quota gets LimitsExceeded, and secretd says so in its log")
    func overTheBus() throws {
        let fixture = try SecretdFixture()
        try "quota-items = 5\n".write(to: fixture.configDirectory.appendingPathComponent("secretd.conf"), atomically: true, encoding: .utf8)
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let result = try fixture.runClient("large-writer.py", ["60", "2", "16", "32", "quota"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.text.utf8)) as? [String: Any], "\(result.text) \(result.errorOutput)")
        #expect(report["stored"] as? Int == 5)
        #expect(report["refusal"] as? String == Self.limitsExceeded)
        #expect(daemon.logs("refused a write over the quota (quota-items = 5)"))
    }
}
