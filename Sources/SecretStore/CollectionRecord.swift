extension Store {
    /// A stored collection (keyring); its label is not secret.
    public struct CollectionRecord: Equatable, Sendable {
        /// The database id.
        public var id: Int64
        /// The stable name used in its object path (`login`).
        public var name: String
        /// The label shown to users.
        public var label: String
        /// Creation time, seconds since 1970.
        public var created: UInt64
        /// Last change, seconds since 1970.
        public var modified: UInt64
        /// A random identity that binds the collection's sealed data to it.
        package var uuid: [UInt8]
    }
}

extension Store.CollectionRecord {
    /// The columns a record is read from: all but the key derivation parameters and the
    /// wrapped key, which only an unlock reads. Listed in the order the fuzz corpus's
    /// collection rows give their values (fuzz/corpus/stored-item).
    package static let columns = Selection<CollectionColumn>([.id, .name, .label, .created, .modified, .uuid])

    /// The record of a row of ``columns``. A time before 1970 (only a damaged or edited file
    /// holds one) reads as 1970.
    package init(_ row: Row<CollectionColumn>) {
        self.init(
            id: row.integer(.id) ?? 0, name: row.text(.name) ?? "", label: row.text(.label) ?? "",
            created: UInt64(clamping: row.integer(.created) ?? 0), modified: UInt64(clamping: row.integer(.modified) ?? 0),
            uuid: row.blob(.uuid) ?? [])
    }
}
