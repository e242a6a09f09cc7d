extension Store {
    /// What checking the seals of one collection's items found (``Store/checkSeals(of:keys:)``):
    /// how many opened, how many the keys held could not try, and which did not open.
    public struct SealCheck: Equatable, Sendable {
        /// One item whose sealed contents did not open with the keys held.
        public struct Failure: Equatable, Sendable {
            /// The item's database id (the last part of its object path).
            public var itemID: Int64
            /// What failed (the store's error; never a secret).
            public var reason: String
        }

        /// Items opened and decoded.
        public var opened = 0
        /// Items whose key is not held (sealed with the master key after an ordinary lock).
        public var notChecked = 0
        /// Items that did not open or decode.
        public var failures: [Failure] = []

        /// Nothing checked yet.
        public init() {}

        /// Whether every item tried opened.
        public var isSound: Bool { failures.isEmpty }
    }
}
