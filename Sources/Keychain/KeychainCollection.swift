/// A Secret Service collection (keyring), named by its alias.
///
/// A handle without a collection writes to the default collection and reads from all of them;
/// a handle with one writes there and reads only there.
public struct KeychainCollection: Hashable, Sendable, CustomStringConvertible {
    /// The alias the provider resolves (`default`, `session`, `login`, …).
    public let alias: String

    /// Names a collection by its alias, as `secret-tool store --collection` does.
    public init(alias: String) {
        self.alias = alias
    }

    /// The user's default collection, normally the `login` keyring.
    public static let `default` = KeychainCollection(alias: "default")
    /// The in-memory collection that providers clear when the session ends.
    public static let session = KeychainCollection(alias: "session")

    /// The alias.
    public var description: String { alias }
}
