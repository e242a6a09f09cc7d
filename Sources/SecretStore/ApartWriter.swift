import FoundationEssentials
import Glibc
import Synchronization

/// A second read-write connection to the store's file, for writing one large item off the
/// main loop: the row's pages are copied, appended to the write-ahead log and synced on the
/// thread that sealed the item (secretd's `SealingQueue`), while the main connection goes on
/// answering other clients. SQLite lets one connection write at a time: while this one holds
/// the write lock, a write of the main connection waits for it (its busy timeout), and this one
/// waits for the main connection's open group to be committed. The main connection takes a
/// fresh snapshot for every write once this exists (``Database/otherWriters``), so it never
/// writes over what it has not seen.
///
/// Its commit only writes the log (`synchronous = NORMAL`) and lets go of the write lock; the
/// log is then synced by this thread with the lock released, before the write is reported
/// durable. So a write of the main connection waits for the copying of the item's pages, not
/// for their sync too. A power cut before that sync can take back only this item, which
/// nobody was told was stored: SQLite's log stays consistent with a commit not synced, and a
/// later commit of either connection syncs the log too.
///
/// Used by one thread at a time; ``close()`` may come from another and waits for a write in
/// progress.
public final class ApartWriter: @unchecked Sendable {
    /// The connection, nil once closed.
    private let store: Mutex<Store?>

    /// Opens a connection to the database at `url` (already checked and migrated by the main
    /// connection).
    init(url: URL) throws(StoreError) {
        let database = try Database(path: url.path)
        do throws(StoreError) {
            try database.execute("PRAGMA foreign_keys = ON")
            try database.execute("PRAGMA synchronous = NORMAL")
            // The main connection commits its group when its loop is idle or its socket is
            // drained; under a long stream of calls that can take a while.
            database.busyTimeout(milliseconds: 30_000)
        } catch {
            database.close()
            throw error
        }
        store = Mutex(Store(copyAt: url, database: database))
        logPath = url.path + "-wal"
    }

    /// The write-ahead log's file, which ``createItem(_:in:creator:within:recording:)`` syncs.
    private let logPath: String

    /// Syncs the write-ahead log's file, which holds the commit just made.
    private func syncLog() throws(StoreError) {
        let file = open(logPath, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { throw .io("cannot open the write-ahead log to sync it: \(String(cString: strerror(errno)))") }
        defer { Glibc.close(file) }
        guard fdatasync(file) == 0 else {
            let error = errno
            if error == ENOSPC { throw .noSpace("cannot sync the write-ahead log") }
            if error == EROFS { throw .readOnly("cannot sync the write-ahead log") }
            throw .io("cannot sync the write-ahead log: \(String(cString: strerror(error)))")
        }
    }

    /// Creates the item `sealed` holds in `collection`, in a transaction of this connection,
    /// committed and synced (durable) when it returns; as ``Store/createItem(_:in:times:creator:within:)``.
    /// When the sync fails the item is there but not known to be durable, and the error is
    /// thrown: the caller is told the write failed, as when a commit fails.
    /// Refuses it (`.notFound`) when the collection was deleted (or replaced by a restore) since
    /// the item was sealed. `recording` (the audit trail's entry) is written in the same
    /// transaction.
    public func createItem(
        _ sealed: Store.SealedItem, in collection: Store.CollectionRecord, creator: String?, within quota: Store.Quota?,
        recording: Recording? = nil
    ) throws(StoreError) -> Store.ItemRecord {
        try write(in: [collection], recording: recording) { store throws(StoreError) in
            try store.createItem(sealed, in: collection, creator: creator, within: quota)
        }
    }

    /// Work that records a write in the store (the audit trail's entries), run in the write's
    /// own transaction after it.
    public typealias Recording = @Sendable (Store) throws(StoreError) -> Void

    /// Reads `item`'s contents and the version of its row, for an update of it sealed off the
    /// loop (``updateItem(_:replacing:version:previous:in:within:recording:)``).
    public func readItem(_ item: Store.ItemRecord, in collection: Store.CollectionRecord, keys: Store.ItemKeys) throws(StoreError)
        -> (contents: ItemContents, version: [UInt8])
    {
        try store.withLock { store throws(StoreError) in
            guard let store else { throw .io("the database is closed") }
            return try store.readItemAndVersion(item, in: collection, keys: keys)
        }
    }

    /// Gives `item` the contents `sealed` holds, in a transaction of this connection, durable
    /// when it returns, as ``createItem(_:in:creator:within:recording:)`` is; its row had `version` and
    /// attributes `previous` when read (``readItem(_:in:keys:)``). Refuses it (`.notFound`)
    /// when the item or its collection is gone, or the item was written since.
    public func updateItem(
        _ sealed: Store.SealedItem, replacing item: Store.ItemRecord, version: [UInt8], previous: [String: String],
        in collection: Store.CollectionRecord, within quota: Store.Quota?, recording: Recording? = nil
    ) throws(StoreError) -> Store.ItemRecord {
        try write(in: [collection], recording: recording) { store throws(StoreError) in
            try store.updateItem(sealed, replacing: item, version: version, previous: previous, in: collection, within: quota)
        }
    }

    /// Writes a batch of items in one transaction of this connection, durable when it returns:
    /// the items `creating` holds are created in `collection` (`creator` counts them for its
    /// quota) and each of `replacing` gives its item new contents, as
    /// ``updateItem(_:replacing:version:previous:in:within:recording:)`` does; the quota is checked once,
    /// after the whole batch, which it refuses whole. Refuses it (`.notFound`) when a
    /// collection is gone or an item to replace was written since it was read; nothing is
    /// written then. `recording` is written in the same transaction.
    public func writeItems(
        creating: [Store.SealedItem], in collection: Store.CollectionRecord, replacing: [Store.SealedReplacement],
        creator: String?, within quota: Store.Quota?, recording: Recording? = nil
    ) throws(StoreError) -> (created: [Store.ItemRecord], replaced: [Store.ItemRecord]) {
        try write(in: [collection] + replacing.map(\.collection), recording: recording) { store throws(StoreError) in
            var created: [Store.ItemRecord] = []
            created.reserveCapacity(creating.count)
            for sealed in creating { created.append(try store.createItem(sealed, in: collection, creator: creator, within: nil)) }
            var replaced: [Store.ItemRecord] = []
            for change in replacing {
                replaced.append(try store.updateItem(
                    change.sealed, replacing: change.item, version: change.version, previous: change.previous,
                    in: change.collection, within: nil))
            }
            if let quota { try store.check(quota, creator: creator.map(Store.creatorKey)) }
            return (created, replaced)
        }
    }

    /// Runs `body`, then `recording`, in a transaction of this connection that lands whole or
    /// not at all (``Database/wholeTransaction(_:)``), committed and then synced; refuses it
    /// (`.notFound`) when one of `collections` was deleted (or replaced by a restore) since its
    /// items were sealed.
    private func write<Written>(
        in collections: [Store.CollectionRecord], recording: Recording?, _ body: @Sendable (Store) throws(StoreError) -> Written
    ) throws(StoreError) -> Written {
        try store.withLock { store throws(StoreError) -> Written in
            guard let store else { throw .io("the database is closed") }
            let written = try store.database.wholeTransaction { () throws(StoreError) -> Written in
                var checked: Set<Int64> = []
                for collection in collections where checked.insert(collection.id).inserted {
                    let found = try store.database.rows("SELECT uuid FROM collections WHERE id = ?", [.integer(collection.id)])
                    guard case .blob(let uuid)? = found.first?.first, uuid == collection.uuid else { throw .notFound }
                }
                let written = try body(store)
                try recording?(store)
                return written
            }
            try syncLog()
            return written
        }
    }

    /// Closes the connection, after the write in progress if any; later writes throw.
    func close() {
        store.withLock { store in
            store?.database.close()
            store = nil
        }
    }
}
