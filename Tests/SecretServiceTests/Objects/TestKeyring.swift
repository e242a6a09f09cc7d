import DBusValues
import KeychainCore
@testable import SecretService
import Testing

/// The shared test keyring of the per-interface suites (``ItemObjectTests`` and its siblings):
/// ``InProcessDaemonTests/Fixture``'s provider (a fresh data directory, a manual clock, a
/// recording endpoint), with typed calls for what the suites do often.
typealias TestKeyring = InProcessDaemonTests.Fixture

extension InProcessDaemonTests.Fixture {
    typealias Names = SecretServiceNames

    /// Stores an item in the login keyring through `CreateItem`; its path.
    @discardableResult
    func createItem(
        label: String = "Mail", attributes: [String: String], secret: String, session: String, replace: Bool = true,
        in collection: String = Self.login
    ) throws -> String {
        let created = try call(collection, Names.Interface.collection, "CreateItem", [
            .properties([Names.Property.itemLabel: .string(label), Names.Property.itemAttributes: .stringMap(attributes)]),
            Self.secret(session, secret), .boolean(replace),
        ]).get()
        return try #require(created.tuple?.first?.objectPath)
    }

    /// The secret of the item at `path`, read through `GetSecret` in `session`, as text.
    func secret(of path: String, session: String) throws -> String {
        let reply = try call(path, Names.Interface.item, "GetSecret", [.objectPath(session)]).get()
        let bytes = try #require(reply.tuple?.first?.tuple?[2].bytes)
        return String(decoding: bytes.array, as: UTF8.self)
    }

    /// The property `name` of `interface` at `path`, as the test client reads it.
    func property(_ name: String, of interface: String, at path: String) -> Result<DBusValue, SecretServiceError> {
        daemon.router.property(name, interface: interface, path: path, sender: Self.client)
    }

    /// Writes the property `name` of `interface` at `path` as the test client; commits.
    func setProperty(_ name: String, of interface: String, at path: String, to value: DBusValue) -> SecretServiceError? {
        let refusal = daemon.router.setProperty(name, interface: interface, path: path, value: value, sender: Self.client)
        _ = daemon.commitPending()
        return refusal
    }

    /// The service's `SearchItems`: the unlocked and the locked paths.
    func search(_ attributes: [String: String]) throws -> (unlocked: [String], locked: [String]) {
        let reply = try call(Self.service, Names.Interface.service, "SearchItems", [.stringMap(attributes)]).get()
        return (reply.tuple?[0].objectPaths ?? [], reply.tuple?[1].objectPaths ?? [])
    }
}
