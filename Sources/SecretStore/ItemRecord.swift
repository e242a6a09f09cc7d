extension Store {
    /// A stored item's identity and timestamps (everything else is sealed).
    public struct ItemRecord: Equatable, Sendable {
        /// The database id, stable for the item's life (used in its object path).
        public var id: Int64
        /// The collection's database id.
        public var collectionID: Int64
        /// Creation time, seconds since 1970.
        public var created: UInt64
        /// Last change, seconds since 1970.
        public var modified: UInt64
        /// The access group it belongs to (kept in the clear so it can be enforced while
        /// locked); nil for an item written before schema version 2, until its collection is
        /// next unlocked (see ``Store/assignAccessGroups(in:key:)``).
        public var accessGroup: String?
        /// Whether it stays readable after an ordinary lock (accessibility class
        /// `after-first-unlock`): it is sealed with ``ItemKeys/afterFirstUnlock``.
        public var survivesLock: Bool = false
    }
}

extension Store.ItemRecord {
    /// The columns a record is read from: every column of `items` but the sealed contents,
    /// which are read only when needed (a search reads thousands of records).
    /// A column added to `items` is read here too, so the record's decoder must take it (a
    /// test checks), unless it is left out here as the creator is (only the quota triggers
    /// read it).
    package static let columns = Selection<ItemColumn>(allBut: [.sealed, .creator])

    /// The record of a row of ``columns``. A time before 1970 (only a damaged or edited file
    /// holds one) reads as 1970.
    package init(_ row: Row<ItemColumn>) {
        self.init(
            id: row.integer(.id) ?? 0, collectionID: row.integer(.collectionID) ?? 0,
            created: UInt64(clamping: row.integer(.created) ?? 0), modified: UInt64(clamping: row.integer(.modified) ?? 0),
            accessGroup: StoredAccessGroup.group(row.text(.accessGroup)), survivesLock: row.integer(.survivesLock) == 1)
    }
}
