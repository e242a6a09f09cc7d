import Foundation
import KeychainTestSupport
import Testing

/// What the provider suites share to talk to secretd in GVariant text (the form
/// `SecretdFixture.call` and `BusConnection.call` take and print): the object paths and
/// interface names, and helpers for sessions, secrets and items. A suite conforms to get them.
protocol SecretServiceCalls {}

extension SecretServiceCalls {
    /// The service object.
    static var service: String { "/org/freedesktop/secrets" }
    /// The login collection secretd creates.
    static var login: String { "/org/freedesktop/secrets/collection/login" }
    static var serviceInterface: String { "org.freedesktop.Secret.Service" }
    static var collectionInterface: String { "org.freedesktop.Secret.Collection" }
    static var itemInterface: String { "org.freedesktop.Secret.Item" }
    static var properties: String { "org.freedesktop.DBus.Properties" }

    /// The D-Bus error name the call in `body` is refused with; nil when it succeeds, and a
    /// description of the failure when it failed some other way (so a test that wants one
    /// exact refusal cannot pass on a typo in its GVariant text or a lost connection).
    func refusal(_ body: () throws -> Any) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as BusError {
            return error.name ?? "not refused by the provider: \(error)"
        } catch {
            return "not a D-Bus error: \(error)"
        }
    }

    /// The object paths in a reply printed in GVariant text format.
    func objectPaths(in reply: String) -> [String] {
        reply.components(separatedBy: "objectpath '").dropFirst().compactMap { $0.split(separator: "'").first.map(String.init) }
    }

    /// GVariant text for a secret in the plain session at `session`.
    static func secret(_ session: String, _ value: String = "x", contentType: String = "'text/plain'") -> String {
        let bytes = Array(value.utf8).map { "0x\(String($0, radix: 16))" }.joined(separator: ", ")
        return "(objectpath '\(session)', @ay [], @ay [\(bytes)], \(contentType))"
    }

    /// GVariant text for a secret in the plain session at `session`.
    func secret(_ session: String, _ value: String) -> String { Self.secret(session, value) }

    /// Opens a plain session on `fixture`'s control connection; returns its path.
    func openPlainSession(_ fixture: SecretdFixture) throws -> String {
        let reply = try fixture.call(Self.service, Self.serviceInterface, "OpenSession", "('plain', <''>)")
        return try #require(objectPaths(in: reply).first, "\(reply)")
    }

    /// Opens a plain session on `connection`; returns its path.
    func openPlainSession(_ connection: BusConnection) throws -> String {
        let reply = try connection.call(Self.service, Self.serviceInterface, "OpenSession", "('plain', <''>)")
        return try #require(objectPaths(in: reply).first, "\(reply)")
    }

    /// Creates an item labelled `test` in the login collection; returns its path.
    func createItem(_ fixture: SecretdFixture, _ session: String, attributes: String, value: String) throws -> String {
        let reply = try fixture.call(
            Self.login, Self.collectionInterface, "CreateItem",
            "({'org.freedesktop.Secret.Item.Label': <'test'>, 'org.freedesktop.Secret.Item.Attributes': <\(attributes)>}, \(secret(session, value)), false)")
        return try #require(objectPaths(in: reply).first, "\(reply)")
    }
}
