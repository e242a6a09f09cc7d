public import SecretCrypto
import FoundationEssentials

// What secretd keeps for sync (schema versions 6 and 10; SecretSync holds the logic): each synced
// collection's remote and sealed state (since 10, each item's entry of it sealed on its own), the
// sync id of each local item, the local changes not yet published, and the versions that lost a
// merge.

extension Store {
    /// A synced collection, as the store keeps it.
    public struct SyncSettings: Equatable, Sendable {
        /// The collection's database id.
        public var collectionID: Int64
        /// The git remote it syncs through.
        public var remote: String
        /// When the last round ended well (seconds since 1970).
        public var lastRound: UInt64?
        /// Why the last round failed; nil when it did not.
        public var lastError: String?
        /// How many merges kept a losing version as history.
        public var resolved: Int
    }

    /// A local change not yet published: the item, when it was made, whether it deleted it.
    public struct SyncChange: Hashable, Sendable {
        /// The local item's database id.
        public var itemID: Int64
        /// The hybrid logical time it was made: milliseconds and counter.
        public var milliseconds: UInt64
        public var counter: UInt32
        /// Whether it deleted the item.
        public var deleted: Bool

        /// A change of item `itemID` made at (`milliseconds`, `counter`).
        public init(itemID: Int64, milliseconds: UInt64, counter: UInt32, deleted: Bool) {
            self.itemID = itemID
            self.milliseconds = milliseconds
            self.counter = counter
            self.deleted = deleted
        }
    }

    /// A version of a synced item that lost a merge.
    public struct SyncHistoryEntry: Equatable, Sendable {
        /// The entry's id.
        public var id: Int64
        /// The item's sync id.
        public var syncID: [UInt8]
        /// The version's hybrid logical time: milliseconds and counter.
        public var milliseconds: UInt64
        public var counter: UInt32
        /// The device that made it.
        public var device: [UInt8]
        /// When it was kept (seconds since 1970).
        public var kept: UInt64
        /// Whether the version was a delete.
        public var deleted: Bool
    }

    // MARK: - Synced collections

    /// Every synced collection.
    public func syncedCollections() throws(StoreError) -> [SyncSettings] {
        try database.rows(Self.syncSettings, [], Self.settings)
    }

    /// The sync settings of `collection`; nil when it does not sync.
    public func syncSettings(of collection: CollectionRecord) throws(StoreError) -> SyncSettings? {
        try database.firstRow(Self.syncSettingsOfCollection, [.integer(collection.id)], Self.settings)
    }

    private static let syncSettings = Query(Selection<SyncVaultColumn>(allBut: [.state]), "FROM sync_vaults")
    private static let syncSettingsOfCollection = Query(
        Selection<SyncVaultColumn>(allBut: [.state]), "FROM sync_vaults WHERE collection_id = ?")

    private static func settings(_ row: Row<SyncVaultColumn>) -> SyncSettings {
        SyncSettings(
            collectionID: row.integer(.collectionID) ?? 0, remote: row.text(.remote) ?? "",
            lastRound: row.integer(.lastRound).map { UInt64(clamping: $0) }, lastError: row.text(.lastError),
            resolved: Int(row.integer(.resolved) ?? 0))
    }

    /// Keeps `state` (SecretSync's encoding) as `collection`'s sync state, sealed under its
    /// master key, with `remote`, and the item entries given (nil: dropped), each sealed on its
    /// own, in one transaction; the collection syncs from now on. Entries not given stay as
    /// they are.
    public func saveSyncState(
        _ state: SecureBytes, entries: [String: [UInt8]?] = [:], remote: String, of collection: CollectionRecord, keys: ItemKeys
    ) throws(StoreError) {
        guard let master = keys.master else { throw .locked }
        let sealed = try StoreError.fromCrypto { () throws(CryptoError) in
            try state.withBytes { (bytes) throws(CryptoError) in
                try Gcrypt.seal(bytes, key: master, associatedData: Self.syncStateAssociatedData(collection.uuid))
            }
        }
        try database.transaction { () throws(StoreError) in
            if try syncSettings(of: collection) == nil {
                try database.insert([SyncVaultColumn.collectionID: .integer(collection.id), .remote: .text(remote), .state: .blob(sealed)])
            } else {
                try database.update([SyncVaultColumn.remote: .text(remote), .state: .blob(sealed)], where: .collectionID, is: .integer(collection.id))
            }
            for (name, entry) in entries {
                guard let entry else {
                    try database.run("DELETE FROM sync_entries WHERE collection_id = ? AND name = ?", [.integer(collection.id), .text(name)])
                    continue
                }
                let sealedEntry = try StoreError.fromCrypto { () throws(CryptoError) in
                    try SecureBytes(entry).withBytes { (bytes) throws(CryptoError) in
                        try Gcrypt.seal(bytes, key: master, associatedData: Self.syncEntryAssociatedData(collection.uuid, name))
                    }
                }
                try database.insert(
                    [SyncEntryColumn.collectionID: .integer(collection.id), .name: .text(name), .sealed: .blob(sealedEntry)],
                    onConflict: .replace)
            }
        }
    }

    /// `collection`'s sync state, opened with its master key, and its item entries by name;
    /// nil when it does not sync.
    public func syncState(of collection: CollectionRecord, keys: ItemKeys) throws(StoreError)
        -> (state: SecureBytes, entries: [String: [UInt8]])?
    {
        guard let master = keys.master else { throw .locked }
        let found = try database.firstRow(Self.sealedState, [.integer(collection.id)]) { $0.blob(.state) }
        guard let found, let sealed = found else { return nil }
        let state = try StoreError.fromCrypto { () throws(CryptoError) in
            try Gcrypt.open(sealed, key: master, associatedData: Self.syncStateAssociatedData(collection.uuid))
        }
        var entries: [String: [UInt8]] = [:]
        for case let (name?, sealedEntry?) in try database.rows(Self.entriesOfCollection, [.integer(collection.id)], { ($0.text(.name), $0.blob(.sealed)) }) {
            entries[name] = try StoreError.fromCrypto { () throws(CryptoError) in
                try Gcrypt.open(sealedEntry, key: master, associatedData: Self.syncEntryAssociatedData(collection.uuid, name))
                    .withBytes { Array($0) }
            }
        }
        return (state, entries)
    }

    private static let sealedState = Query(Selection<SyncVaultColumn>([.state]), "FROM sync_vaults WHERE collection_id = ?")
    private static let entriesOfCollection = Query(
        Selection<SyncEntryColumn>([.name, .sealed]), "FROM sync_entries WHERE collection_id = ?")

    /// Records how `collection`'s last round ended: well now (`error` nil), or with `error`;
    /// `resolved` more merges kept a losing version.
    public func recordSyncRound(of collection: CollectionRecord, error: String?, resolved: Int) throws(StoreError) {
        if let error {
            try database.run(
                "UPDATE sync_vaults SET last_error = ?, resolved = resolved + ? WHERE collection_id = ?",
                [.text(error), .integer(Int64(resolved)), .integer(collection.id)])
        } else {
            try database.run(
                "UPDATE sync_vaults SET last_round = ?, last_error = NULL, resolved = resolved + ? WHERE collection_id = ?",
                [.integer(Int64(Self.now())), .integer(Int64(resolved)), .integer(collection.id)])
        }
    }

    /// Stops syncing `collection`: its state, ids and pending changes go; its history stays.
    public func stopSync(of collection: CollectionRecord) throws(StoreError) {
        try database.transaction { () throws(StoreError) in
            for table in [SyncVaultColumn.table, SyncEntryColumn.table, SyncItemColumn.table, SyncChangeColumn.table] {
                try database.run("DELETE FROM \(table) WHERE collection_id = ?", [.integer(collection.id)])
            }
        }
    }

    // MARK: - Sync ids

    /// The sync id of every local item of `collection` that has one (deleted ones included),
    /// by local item id.
    public func syncIDs(in collection: CollectionRecord) throws(StoreError) -> [Int64: [UInt8]] {
        let rows = try database.rows(Self.syncIDsOfCollection, [.integer(collection.id)]) { ($0.integer(.itemID), $0.blob(.syncID)) }
        var ids: [Int64: [UInt8]] = [:]
        for case let (item?, id?) in rows { ids[item] = id }
        return ids
    }

    private static let syncIDsOfCollection = Query(
        Selection<SyncItemColumn>([.itemID, .syncID]), "FROM sync_items WHERE collection_id = ?")

    /// The items of `collection` that have no sync id and no change waiting: those that never
    /// synced (found by SQLite, without reading the others).
    public func itemsNeverSynced(in collection: CollectionRecord) throws(StoreError) -> [ItemRecord] {
        try database.rows(Self.neverSynced, [.integer(collection.id)], ItemRecord.init)
    }

    private static let neverSynced = Query(
        ItemRecord.columns,
        "FROM items WHERE collection_id = ? AND id NOT IN (SELECT item_id FROM sync_items) AND id NOT IN (SELECT item_id FROM sync_changes) ORDER BY id")

    /// The sync id of local item `itemID`; nil when it has none.
    public func syncID(ofItem itemID: Int64) throws(StoreError) -> [UInt8]? {
        try database.firstRow(Self.syncIDOfItem, [.integer(itemID)]) { $0.blob(.syncID) } ?? nil
    }

    /// The local item of `collection` with the sync id `syncID`; nil when there is none.
    public func itemID(withSyncID syncID: [UInt8], in collection: CollectionRecord) throws(StoreError) -> Int64? {
        try database.firstRow(Self.itemWithSyncID, [.blob(syncID), .integer(collection.id)]) { $0.integer(.itemID) } ?? nil
    }

    private static let syncIDOfItem = Query(Selection<SyncItemColumn>([.syncID]), "FROM sync_items WHERE item_id = ?")
    private static let itemWithSyncID = Query(
        Selection<SyncItemColumn>([.itemID]), "FROM sync_items WHERE sync_id = ? AND collection_id = ?")

    /// Gives local item `itemID` of `collection` the sync id `syncID`.
    public func setSyncID(_ syncID: [UInt8], ofItem itemID: Int64, in collection: CollectionRecord) throws(StoreError) {
        try database.insert(
            [SyncItemColumn.itemID: .integer(itemID), .collectionID: .integer(collection.id), .syncID: .blob(syncID)],
            onConflict: .replace)
    }

    /// Forgets the sync id of local item `itemID` (its delete was published).
    public func forgetSyncID(ofItem itemID: Int64) throws(StoreError) {
        try database.run("DELETE FROM sync_items WHERE item_id = ?", [.integer(itemID)])
    }

    // MARK: - Local changes

    /// Records a local change of item `itemID`, made at the hybrid logical time given; it
    /// replaces an earlier one of the same item not yet published.
    public func noteSyncChange(_ change: SyncChange, in collection: CollectionRecord) throws(StoreError) {
        try database.insert([
            SyncChangeColumn.itemID: .integer(change.itemID), .collectionID: .integer(collection.id),
            .milliseconds: .integer(Int64(clamping: change.milliseconds)), .counter: .integer(Int64(change.counter)),
            .deleted: .integer(change.deleted ? 1 : 0),
        ], onConflict: .replace)
    }

    /// The local changes of `collection` not yet published.
    public func syncChanges(in collection: CollectionRecord) throws(StoreError) -> [SyncChange] {
        try database.rows(Self.changesOfCollection, [.integer(collection.id)]) { row in
            SyncChange(
                itemID: row.integer(.itemID) ?? 0, milliseconds: UInt64(clamping: row.integer(.milliseconds) ?? 0),
                counter: UInt32(clamping: row.integer(.counter) ?? 0), deleted: row.integer(.deleted) == 1)
        }
    }

    private static let changesOfCollection = Query(
        Selection<SyncChangeColumn>(allBut: [.collectionID]), "FROM sync_changes WHERE collection_id = ?")

    /// Drops the change `change` once it is published, unless a later one replaced it meanwhile.
    public func removeSyncChange(_ change: SyncChange) throws(StoreError) {
        try database.run(
            "DELETE FROM sync_changes WHERE item_id = ? AND milliseconds = ? AND counter = ?",
            [.integer(change.itemID), .integer(Int64(clamping: change.milliseconds)), .integer(Int64(change.counter))])
    }

    // MARK: - History

    /// Keeps a version of synced item `syncID` that lost a merge: `plaintext` (SecretSync's
    /// encoding of the item; nil for a delete) sealed under the master key.
    public func addSyncHistory(
        syncID: [UInt8], milliseconds: UInt64, counter: UInt32, device: [UInt8], plaintext: SecureBytes?,
        in collection: CollectionRecord, keys: ItemKeys
    ) throws(StoreError) {
        guard let master = keys.master else { throw .locked }
        try database.transaction { () throws(StoreError) in
            try database.insert([
                SyncHistoryColumn.collectionID: .integer(collection.id), .syncID: .blob(syncID),
                .milliseconds: .integer(Int64(clamping: milliseconds)), .counter: .integer(Int64(counter)), .device: .blob(device),
                .kept: .integer(Int64(Self.now())), .sealed: .null,
            ])
            if let plaintext {
                let id = database.lastInsertID
                let sealed = try StoreError.fromCrypto { () throws(CryptoError) in
                    try plaintext.withBytes { (bytes) throws(CryptoError) in
                        try Gcrypt.seal(bytes, key: master, associatedData: Self.historyAssociatedData(collection.uuid, id))
                    }
                }
                try database.update([SyncHistoryColumn.sealed: .blob(sealed)], where: .id, is: .integer(id))
            }
            // The newest ``historyLimit`` versions of each item are kept.
            try database.run(
                "DELETE FROM sync_history WHERE sync_id = ? AND collection_id = ? AND id NOT IN "
                    + "(SELECT id FROM sync_history WHERE sync_id = ? AND collection_id = ? ORDER BY id DESC LIMIT ?)",
                [.blob(syncID), .integer(collection.id), .blob(syncID), .integer(collection.id), .integer(Int64(Self.historyLimit))])
        }
    }

    /// How many lost versions of one item the history keeps.
    public static let historyLimit = 20

    /// The kept versions of synced item `syncID` in `collection`, oldest first.
    public func syncHistory(of syncID: [UInt8], in collection: CollectionRecord) throws(StoreError) -> [SyncHistoryEntry] {
        try database.rows(Self.historyOfItem, [.blob(syncID), .integer(collection.id)], Self.historyEntry)
    }

    /// Every kept version in `collection` (of items alive or deleted).
    public func syncHistory(in collection: CollectionRecord) throws(StoreError) -> [SyncHistoryEntry] {
        try database.rows(Self.historyOfCollection, [.integer(collection.id)], Self.historyEntry)
    }

    private static let historyOfItem = Query(
        Selection<SyncHistoryColumn>(allBut: [.collectionID]),
        "FROM sync_history WHERE sync_id = ? AND collection_id = ? ORDER BY milliseconds, counter, id")
    private static let historyOfCollection = Query(
        Selection<SyncHistoryColumn>(allBut: [.collectionID]), "FROM sync_history WHERE collection_id = ? ORDER BY id")

    private static func historyEntry(_ row: Row<SyncHistoryColumn>) -> SyncHistoryEntry {
        SyncHistoryEntry(
            id: row.integer(.id) ?? 0, syncID: row.blob(.syncID) ?? [], milliseconds: UInt64(clamping: row.integer(.milliseconds) ?? 0),
            counter: UInt32(clamping: row.integer(.counter) ?? 0), device: row.blob(.device) ?? [],
            kept: UInt64(clamping: row.integer(.kept) ?? 0), deleted: row.blob(.sealed) == nil)
    }

    /// The plaintext of history entry `entry`, opened with the master key; nil for a delete.
    public func openSyncHistory(_ entry: SyncHistoryEntry, in collection: CollectionRecord, keys: ItemKeys) throws(StoreError)
        -> SecureBytes?
    {
        guard let master = keys.master else { throw .locked }
        let found = try database.firstRow(Self.sealedHistory, [.integer(entry.id), .integer(collection.id)]) { $0.blob(.sealed) }
        guard let found else { throw .notFound }
        guard let sealed = found else { return nil }
        return try StoreError.fromCrypto { () throws(CryptoError) in
            try Gcrypt.open(sealed, key: master, associatedData: Self.historyAssociatedData(collection.uuid, entry.id))
        }
    }

    private static let sealedHistory = Query(
        Selection<SyncHistoryColumn>([.sealed]), "FROM sync_history WHERE id = ? AND collection_id = ?")

    private static func syncStateAssociatedData(_ uuid: [UInt8]) -> [UInt8] { Array("secretd-sync-state-v1".utf8) + uuid }

    private static func syncEntryAssociatedData(_ uuid: [UInt8], _ name: String) -> [UInt8] {
        Array("secretd-sync-entry-v1".utf8) + uuid + Array(name.utf8)
    }

    private static func historyAssociatedData(_ uuid: [UInt8], _ id: Int64) -> [UInt8] {
        Array("secretd-sync-history-v1".utf8) + uuid + withUnsafeBytes(of: id.bigEndian) { Array($0) }
    }
}
