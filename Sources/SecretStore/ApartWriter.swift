import FoundationEssentials
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
            try database.execute("PRAGMA synchronous = FULL")
            // The main connection commits its group when its loop is idle or its socket is
            // drained; under a long stream of calls that can take a while.
            database.busyTimeout(milliseconds: 30_000)
        } catch {
            database.close()
            throw error
        }
        store = Mutex(Store(copyAt: url, database: database))
    }

    /// Creates the item `sealed` holds in `collection`, in a transaction of this connection,
    /// committed (durable) when it returns; as ``Store/createItem(_:in:times:creator:within:)``.
    /// Refuses it (`.notFound`) when the collection was deleted (or replaced by a restore) since
    /// the item was sealed.
    public func createItem(
        _ sealed: Store.SealedItem, in collection: Store.CollectionRecord, creator: String?, within quota: Store.Quota?
    ) throws(StoreError) -> Store.ItemRecord {
        try store.withLock { store throws(StoreError) -> Store.ItemRecord in
            guard let store else { throw .io("the database is closed") }
            return try store.database.transaction { () throws(StoreError) -> Store.ItemRecord in
                let found = try store.database.rows("SELECT uuid FROM collections WHERE id = ?", [.integer(collection.id)])
                guard case .blob(let uuid)? = found.first?.first, uuid == collection.uuid else { throw .notFound }
                return try store.createItem(sealed, in: collection, creator: creator, within: quota)
            }
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
