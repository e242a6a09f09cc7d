extension Store {
    /// How much one program may store, and how large the database may grow
    /// (secretd.conf's `quota-items`, `quota-bytes` and `quota-database`).
    public struct Quota: Equatable, Sendable {
        /// Items one program may have created (that are still there).
        public var items: Int
        /// The sealed bytes of those items: labels, attributes and secrets, as stored.
        public var bytes: Int
        /// The bytes of the database file.
        public var databaseBytes: Int

        /// A quota of these limits.
        public init(items: Int, bytes: Int, databaseBytes: Int) {
            self.items = items
            self.bytes = bytes
            self.databaseBytes = databaseBytes
        }

        /// Which limit a write would pass, with its value.
        public enum Limit: Equatable, Sendable, CustomStringConvertible {
            /// `quota-items`.
            case items(Int)
            /// `quota-bytes`.
            case bytes(Int)
            /// `quota-database`.
            case database(Int)

            /// The setting and its value.
            public var description: String {
                switch self {
                case .items(let count): return "quota-items = \(count)"
                case .bytes(let bytes): return "quota-bytes = \(bytes)"
                case .database(let bytes): return "quota-database = \(bytes)"
                }
            }
        }
    }
}
