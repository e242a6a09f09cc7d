import KeychainCore
public import SecretCrypto
public import FoundationEssentials
import Glibc

/// The encrypted keyring database: collections with Argon2id-wrapped master keys, items sealed
/// with AES-256-GCM, and a hash index of attributes so locked collections stay searchable.
///
/// One SQLite file per user (WAL, `synchronous=FULL` but for ``ApartWriter``, which syncs its own commits; foreign keys on). Every write touches
/// only its own rows. Not thread-safe: the daemon uses it from one thread at a time.
public final class Store {
    /// The database file.
    public let databaseURL: URL
    let database: Database

    /// The database file name inside the data directory.
    public static let fileName = "secretd.sqlite3"

    /// Opens (creating if needed) the store in `directory`, which is created 0700; the database
    /// file is 0600. Refuses a corrupted or foreign file, and one from a newer schema version,
    /// leaving it as it was (``DatabaseRefusal`` says what is wrong and what to do).
    public init(directory: URL) throws(StoreError) {
        Gcrypt.initialize()
        try Self.makePrivateDirectory(directory.path)
        databaseURL = directory.appendingPathComponent(Self.fileName)
        // Read before the file is opened below: its fchmod moves the file's change time.
        let vouched = CleanStopMark.vouches(for: databaseURL)
        // The file is 0600 before SQLite opens it, and SQLite gives its -wal and -shm files the
        // database's mode. The umask is left alone: it is the whole process's, and changing it
        // here made files that other threads created at the same time private too.
        let file = open(databaseURL.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard file >= 0 else {
            throw .io("cannot create \(databaseURL.path): \(String(cString: strerror(errno)))")
        }
        fchmod(file, 0o600)
        Glibc.close(file)
        let database = try Database(path: databaseURL.path)
        // Nothing is written before these checks, and a file they refuse is closed without a
        // checkpoint: it stays exactly as it was (DatabaseRefusal).
        do throws(StoreError) {
            try database.execute("PRAGMA foreign_keys = ON")
            if !vouched, let finding = try Self.quickCheckFinding(database) {
                throw .corrupted("its quick check fails: \(finding)")
            }
            try Migrations.check(database)
        } catch {
            database.closeLeavingFile()
            throw error
        }
        self.database = database
        checkedAtStart = !vouched
        CleanStopMark.remove(beside: databaseURL)
        try database.execute("PRAGMA journal_mode = WAL")
        try database.execute("PRAGMA synchronous = FULL")
        try Migrations.migrate(database)
    }

    /// A store over `database`, which is not checked, migrated or switched to WAL here: a copy
    /// at `url` being verified (``verifyBackup(at:keys:)``), to which nothing is written, or the
    /// apart writer's second connection to the live file, which the main one checked
    /// (``ApartWriter``).
    init(copyAt url: URL, database: Database) {
        databaseURL = url
        self.database = database
    }

    /// Whether this start ran SQLite's quick check; false when the mark of the last clean
    /// stop vouched for the file (``CleanStopMark``).
    public private(set) var checkedAtStart = true

    /// Closes the database file. SQLite then folds its write-ahead log into the file, so
    /// after a clean stop `secretd.sqlite3` alone holds every item. The quick check runs
    /// first, and a file that passes it is marked so that the next start need not check it
    /// again (``CleanStopMark``). Returns what the check found when the file fails it (the
    /// next start refuses the file); every later call throws.
    @discardableResult
    public func close() -> String? {
        forgetCollections()
        // A transaction left open would be rolled back by the close; ended first, so that a
        // write of the apart writer waiting for its lock goes through, and the close after it.
        database.endTransaction()
        closeApartWriter()
        guard !database.isClosed else { return nil }
        var finding: String?
        do { finding = try Self.quickCheckFinding(database) } catch { finding = "the check cannot run: \(error)" }
        database.close()
        if finding == nil && access(databaseURL.path + "-wal", F_OK) != 0 { CleanStopMark.write(beside: databaseURL) }
        return finding
    }

    /// What SQLite's quick check finds wrong with `database`, on one line; nil when it passes.
    /// Throws SQLite's own error when the check cannot run at all (a file that is no database).
    private static func quickCheckFinding(_ database: Database) throws(StoreError) -> String? {
        let answer = try database.rows("PRAGMA quick_check").first?.first?.text
        guard answer != "ok" else { return nil }
        return answer.map { $0.split(whereSeparator: \.isNewline).joined(separator: " ") } ?? "no answer"
    }

    /// The second connection large items are written through off the main loop, opened on
    /// first use (nil when it cannot be: the caller writes on this connection). From then on
    /// this connection takes a fresh snapshot for each group's first write
    /// (``Database/otherWriters``).
    public func apartWriter() -> ApartWriter? {
        if let apart { return apart }
        guard !database.isClosed else { return nil }
        do throws(StoreError) {
            apart = try ApartWriter(url: databaseURL)
            database.otherWriters = true
        } catch {
            return nil
        }
        return apart
    }

    /// Lets go of the group's read snapshot when it has only read, so that what the apart
    /// writer committed is seen by the next read: call it on learning of that commit, before
    /// anything reads the new row. (A group that holds writes began after that commit: the
    /// apart writer waits for the write lock.)
    public func noteWrittenApart() { database.endReadSnapshot() }

    /// Runs `body` with every write of this connection that would wait for another one's
    /// write lock (the apart writer's) failing at once with ``StoreError/busy`` instead, so
    /// that the main loop is not held up; returns what `body` returned and whether a write so
    /// failed (that write wrote nothing).
    public func failingWritesWhenBusy<T>(_ body: () -> T) -> (value: T, metBusy: Bool) {
        let before = database.busyFailures
        database.failsWhenBusy = true
        defer { database.failsWhenBusy = false }
        let value = body()
        return (value, database.busyFailures != before)
    }

    /// Closes the apart writer's connection, after its write in progress.
    func closeApartWriter() {
        apart?.close()
        apart = nil
    }

    private var apart: ApartWriter?

    /// Creates `path` and any missing parents (0700), then makes `path` itself 0700. Each
    /// directory it creates is synced into its parent, so that a power cut after the first
    /// acknowledged write (or backup) cannot lose the directory that holds it (SQLite syncs the
    /// entries of the files it creates inside; a backup syncs its own). `what` names the
    /// directory in the error.
    package static func makePrivateDirectory(_ path: String, what: String = "data directory") throws(StoreError) {
        func failure() -> StoreError { .io("cannot create \(what) \(path): \(String(cString: strerror(errno)))") }
        var partial = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            let parent = partial.isEmpty ? "/" : partial
            partial += "/" + component
            if mkdir(partial, 0o700) == 0 {
                let directory = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                if directory >= 0 {
                    fsync(directory)  // best effort: some file systems cannot sync a directory; it was made either way
                    Glibc.close(directory)
                }
            } else if errno != EEXIST {
                throw failure()
            }
        }
        guard chmod(path, 0o700) == 0 else { throw failure() }
    }

    // MARK: - Group commit

    /// Whether work is grouped: the first read or write opens one transaction that every later
    /// one joins, until ``commitPending()`` ends it. The daemon turns it on and ends a group
    /// that wrote when its main loop has nothing left to do, before it replies to a write:
    /// nothing is acknowledged before it is durable, and writes that arrive together share one
    /// sync. A group that only read stays open, so the reads between two writes share one
    /// snapshot. It can miss only what the apart writer (``ApartWriter``) committed since: the
    /// group's first write then takes a fresh snapshot, and ``noteWrittenApart()`` ends it.
    public var groupsCommits: Bool {
        get { database.groupsCommits }
        set { database.groupsCommits = newValue }
    }

    /// From now on the write-ahead log is folded into the file on a thread of its own, with a
    /// connection of its own, rather than by the commit that filled it, so that a commit costs
    /// the writing of its own pages only (``BackgroundCheckpointer``). For the daemon, whose
    /// commits hold other clients up; false when that thread cannot be had.
    @discardableResult
    public func checkpointInBackground() -> Bool { database.checkpointInBackground() }

    /// Lets go of the group's read snapshot when nothing was written in it and a background
    /// checkpoint has finished since it began, so that the log can start over rather than grow
    /// (``Database/renewSnapshotIfCheckpointed()``). Call it between calls.
    public func renewSnapshotIfCheckpointed() { database.renewSnapshotIfCheckpointed() }

    /// Whether grouped writes wait for ``commitPending()``.
    public var hasPendingCommit: Bool { database.hasPendingCommit }

    /// Whether the group's transaction is open (writes, or only a read snapshot).
    public var hasOpenGroup: Bool { database.hasOpenGroup }

    /// A number that changes whenever this store writes (or rolls back) anything, for caches
    /// of what it read.
    public var changeCount: Int64 { database.totalChanges }

    /// Ends the group: commits its writes (on failure they are rolled back and the error
    /// thrown), or lets go of its read snapshot.
    public func commitPending() throws(StoreError) {
        do {
            try database.commitPending()
        } catch {
            forgetRolledBack()
            throw error
        }
    }

    /// Runs `body` as one transaction inside the store's: every write it makes lands, or
    /// none does (a keyring imported whole or not at all), even when `body` caught the failure
    /// of one of them (the whole then throws it).
    public func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        do {
            return try database.wholeTransaction(body)
        } catch {
            forgetRolledBack()
            throw error
        }
    }

    // MARK: - Collections

    /// Collections and aliases as last read. Nearly every call names one, so they are kept
    /// rather than read per call; every write to either table forgets them, and so does a
    /// failed group commit (its writes were rolled back). Only this connection writes them (the
    /// apart writer only creates items).
    private var cachedCollections: [CollectionRecord]?
    private var cachedAliases: [String: String]?

    private func forgetCollections() {
        cachedCollections = nil
        cachedAliases = nil
    }

    /// Forgets what a rollback may have made untrue: collections and aliases it took back, and
    /// the row ``item(id:)`` read inside it (a rollback does not move ``changeCount``).
    func forgetRolledBack() {
        forgetCollections()
        lastRead = nil
    }

    /// Every collection, by name.
    public func collections() throws(StoreError) -> [CollectionRecord] {
        if let cachedCollections { return cachedCollections }
        let found = try database.rows(Self.everyCollection, [], CollectionRecord.init)
        cachedCollections = found
        return found
    }

    private static let everyCollection = Query(CollectionRecord.columns, "FROM collections ORDER BY name")

    /// The collection called `name`, if any.
    public func collection(named name: String) throws(StoreError) -> CollectionRecord? {
        try collections().first { $0.name == name }
    }

    /// Creates a collection whose fresh random master key is wrapped by `password`; returns it
    /// with its keys (it is unlocked). Derives the password's key on this thread.
    public func createCollection(
        name: String, label: String, password: SecureBytes, parameters: KDFParameters = .standard,
        times: Times? = nil
    ) throws(StoreError) -> (CollectionRecord, ItemKeys) {
        guard !name.isEmpty else { throw .invalidInput("collection name is empty") }
        if try collection(named: name) != nil { throw .invalidInput("a collection named '\(name)' exists") }
        return try createCollection(
            name: name, label: label, key: try NewCollectionKey(password: password, parameters: parameters), times: times)
    }

    /// Creates a collection with a key made beforehand (``NewCollectionKey``, on another thread);
    /// returns it with its keys (it is unlocked).
    public func createCollection(
        name: String, label: String, key: NewCollectionKey, times: Times? = nil
    ) throws(StoreError) -> (CollectionRecord, ItemKeys) {
        guard !name.isEmpty else { throw .invalidInput("collection name is empty") }
        if try collection(named: name) != nil { throw .invalidInput("a collection named '\(name)' exists") }
        let now = Self.now()
        let created = times?.created ?? now
        let modified = times?.modified ?? now
        forgetCollections()
        let wrapped = key.wrapped
        try database.insert([
            CollectionColumn.name: .text(name), .uuid: .blob(key.uuid), .label: .text(label), .created: .integer(Int64(created)),
            .modified: .integer(Int64(modified)), .kdfSalt: .blob(wrapped.salt),
            .kdfIterations: .integer(Int64(wrapped.parameters.iterations)),
            .kdfMemoryKiB: .integer(Int64(wrapped.parameters.memoryKiB)), .kdfLanes: .integer(Int64(wrapped.parameters.lanes)),
            .wrappedKey: .blob(wrapped.bytes),
        ])
        let record = CollectionRecord(
            id: database.lastInsertID, name: name, label: label, created: created, modified: modified, uuid: key.uuid)
        return (record, try ItemKeys(master: key.masterKey))
    }

    /// Unwraps the collection's master key with `password`, and returns the keys of its items;
    /// `.wrongPassword` when it does not fit. Derives the password's key on this thread (the
    /// daemon uses ``passwordLock(of:)`` and ``unlock(_:master:)`` to do that elsewhere).
    public func unlock(_ collection: CollectionRecord, password: SecureBytes) throws(StoreError) -> ItemKeys {
        try unlock(collection, master: try passwordLock(of: collection).open(with: password))
    }

    /// What locks the collection's master key, to open on another thread.
    public func passwordLock(of collection: CollectionRecord) throws(StoreError) -> PasswordLock {
        let stored = try database.firstRow(Self.wrappedKey, [.integer(collection.id)]) { row in
            (salt: row.blob(.kdfSalt), iterations: row.integer(.kdfIterations), memory: row.integer(.kdfMemoryKiB),
             lanes: row.integer(.kdfLanes), wrapped: row.blob(.wrappedKey))
        }
        guard let stored, let salt = stored.salt, let iterations = stored.iterations, let memory = stored.memory,
            let lanes = stored.lanes, let wrapped = stored.wrapped
        else { throw .notFound }
        guard let parameters = KDFParameters(
            checkingIterations: Int(iterations), memoryKiB: Int(memory), lanes: Int(lanes))
        else { throw .corrupted("the collection's key derivation parameters are out of range") }
        return PasswordLock(uuid: collection.uuid, wrapped: WrappedKey(salt: salt, parameters: parameters, bytes: wrapped))
    }

    /// The keys of the collection's items from its master key (``PasswordLock/open(with:)``).
    /// Items from before schema version 2 get their access group recorded on the way.
    public func unlock(_ collection: CollectionRecord, master: SecureBytes) throws(StoreError) -> ItemKeys {
        let keys = try ItemKeys(master: master)
        try assignAccessGroups(in: collection, keys: keys)
        return keys
    }

    private static let wrappedKey = Query(
        Selection<CollectionColumn>([.kdfSalt, .kdfIterations, .kdfMemoryKiB, .kdfLanes, .wrappedKey]),
        "FROM collections WHERE id = ?")

    /// Re-wraps the master key under `newPassword` (new salt); nothing else changes.
    public func changePassword(
        _ collection: CollectionRecord, from oldPassword: SecureBytes, to newPassword: SecureBytes,
        parameters: KDFParameters = .standard
    ) throws(StoreError) {
        try rewrap(collection, keys: try unlock(collection, password: oldPassword), to: newPassword, parameters: parameters)
    }

    /// Wraps the master key of `keys`, the collection's keys while it is unlocked, under
    /// `newPassword` (new salt): a password change without the old password. Derives the new
    /// password's key on this thread.
    public func rewrap(
        _ collection: CollectionRecord, keys: ItemKeys, to newPassword: SecureBytes,
        parameters: KDFParameters = .standard
    ) throws(StoreError) {
        guard let masterKey = keys.master else { throw .locked }
        guard newPassword.count > 0 else { throw .invalidInput("the new password is empty") }
        try setWrappedKey(
            of: collection,
            to: try WrappedKey(wrapping: masterKey, under: newPassword, parameters: parameters, uuid: collection.uuid))
    }

    /// Replaces the collection's wrapped master key (made on another thread with
    /// ``PasswordLock/rewrapping(_:under:parameters:)``): its password changes, nothing else.
    public func setWrappedKey(of collection: CollectionRecord, to wrapped: WrappedKey) throws(StoreError) {
        forgetCollections()
        try database.update(
            [CollectionColumn.kdfSalt: .blob(wrapped.salt), .kdfIterations: .integer(Int64(wrapped.parameters.iterations)),
             .kdfMemoryKiB: .integer(Int64(wrapped.parameters.memoryKiB)), .kdfLanes: .integer(Int64(wrapped.parameters.lanes)),
             .wrappedKey: .blob(wrapped.bytes), .modified: .integer(Int64(Self.now()))],
            where: .id, is: .integer(collection.id))
    }

    /// Changes a collection's label.
    public func setLabel(_ label: String, of collection: CollectionRecord) throws(StoreError) {
        forgetCollections()
        try database.update(
            [CollectionColumn.label: .text(label), .modified: .integer(Int64(Self.now()))], where: .id,
            is: .integer(collection.id))
    }

    /// Deletes a collection with its items, their index entries and its aliases.
    public func deleteCollection(_ collection: CollectionRecord) throws(StoreError) {
        forgetCollections()
        try database.transaction { () throws(StoreError) in
            try database.run(
                "DELETE FROM attribute_index WHERE item_id IN (SELECT id FROM items WHERE collection_id = ?)",
                [.integer(collection.id)])
            try database.run("DELETE FROM collections WHERE id = ?", [.integer(collection.id)])
        }
    }

    // MARK: - Aliases

    /// Every alias and the name of the collection it points at.
    public func aliases() throws(StoreError) -> [String: String] {
        if let cachedAliases { return cachedAliases }
        // The collections are kept (and nearly always are already), so names come from them
        // rather than from a join.
        let names = Dictionary(try collections().map { ($0.id, $0.name) }) { first, _ in first }
        var result: [String: String] = [:]
        for (alias, id) in try database.rows(Self.everyAlias, [], { ($0.text(.alias), $0.integer(.collectionID)) }) {
            if let alias, let id, let name = names[id] { result[alias] = name }
        }
        cachedAliases = result
        return result
    }

    private static let everyAlias = Query(Selection<AliasColumn>(AliasColumn.allCases), "FROM aliases")

    /// Points `alias` at `collection`, or removes it when `collection` is nil.
    public func setAlias(_ alias: String, to collection: CollectionRecord?) throws(StoreError) {
        forgetCollections()
        if let collection {
            try database.insert([AliasColumn.alias: .text(alias), .collectionID: .integer(collection.id)], onConflict: .replace)
        } else {
            try database.run("DELETE FROM aliases WHERE alias = ?", [.text(alias)])
        }
    }

    // MARK: - Items

    /// Items of `collection` (or of every collection) that have all of `attributes`; works
    /// while locked, through the hash index.
    ///
    /// The query is driven by the attribute with the fewest items (found by counting at most
    /// ``selectivityProbeLimit`` index entries per attribute) and checks the others per item,
    /// so `service=S, account=A` costs the same whether S has ten items or a hundred thousand.
    /// The access group attribute matches the item's group, also for items that belong to
    /// `default` without carrying the attribute.
    public func search(_ attributes: [String: String], in collection: CollectionRecord? = nil) throws(StoreError)
        -> [ItemRecord]
    {
        var attributes = attributes
        let group = attributes.removeValue(forKey: AccessGroupNames.attribute)
        // The name that drove the last search first, then by name: the same lookup made again
        // counts the entries of the key that settled it last time first (``leastCommon(_:)``).
        let named = attributes.map { (name: $0.key, key: Self.attributeKey(name: $0.key, value: $0.value)) }
            .sorted { ($0.name == lastDriver ? 0 : 1, $0.name) < ($1.name == lastDriver ? 0 : 1, $1.name) }
        var values: [Database.Value] = []
        var query: Query<ItemColumn>
        if let (name, driver, absent) = try leastCommon(named) {
            if named.count > 1 { lastDriver = name }
            if absent { return [] }  // no item at all has this attribute
            query = Self.itemsByKey
            values.append(.blob(driver))
            for (_, key) in named where key != driver {
                query.sql += " AND EXISTS (SELECT 1 FROM attribute_index x WHERE x.hash = ? AND x.item_id = d.item_id)"
                values.append(.blob(key))
            }
        } else {
            query = Self.everyItem
        }
        if let collection {
            query.sql += " AND i.collection_id = ?"
            values.append(.integer(collection.id))
        }
        if let group {
            let condition = StoredAccessGroup.condition("i.access_group", isIn: group)
            query.sql += " AND " + condition.sql
            values += condition.values
        }
        query.sql += " ORDER BY i.id"
        return try database.rows(query, values, ItemRecord.init)
    }

    /// The start of a search driven by one index key; ``search(_:in:)`` adds its conditions.
    private static let itemsByKey = Query(
        ItemRecord.columns, qualifiedBy: "i", "FROM attribute_index d CROSS JOIN items i ON i.id = d.item_id WHERE d.hash = ?")
    /// The start of a search of every item; ``search(_:in:)`` adds its conditions.
    private static let everyItem = Query(ItemRecord.columns, qualifiedBy: "i", "FROM items i WHERE 1")

    /// How many index entries per attribute ``search(_:in:)`` counts, at most, to pick its driver.
    static let selectivityProbeLimit = 1000

    /// The attribute name whose key drove the last search of several attributes.
    private var lastDriver: String?

    /// The key with the fewest index entries (and its attribute's name), or nil for none;
    /// `absent` when it was counted and has no entry at all.
    /// Counting is adaptive and in the order given: every key is counted up to 2 entries first,
    /// and only if none has at most 1 are the rest counted further (to 32, then to
    /// ``selectivityProbeLimit``). The usual lookup, `service=S, account=A`, so reads a handful
    /// of index entries even when S has thousands, and counts one key when `account` comes first.
    private func leastCommon(_ keys: [(name: String, key: [UInt8])]) throws(StoreError) -> (String, [UInt8], absent: Bool)? {
        guard keys.count > 1 else { return keys.first.map { ($0.name, $0.key, false) } }
        var candidates = keys
        var best: (String, [UInt8], absent: Bool)?
        for limit in [2, 32, Self.selectivityProbeLimit] {
            var counted: [(name: String, key: [UInt8], count: Int64)] = []
            for (name, key) in candidates {
                let rows = try database.rows(
                    "SELECT count(*) FROM (SELECT 1 FROM attribute_index WHERE hash = ? LIMIT ?)",
                    [.blob(key), .integer(Int64(limit))])
                let count = rows.first?.first?.integer ?? 0
                if count <= 1 { return (name, key, count == 0) }  // at most one item to check: the cheapest possible driver
                counted.append((name, key, count))
            }
            let fewest = counted.map(\.count).min() ?? 0
            best = counted.first { $0.count == fewest }.map { ($0.name, $0.key, false) }
            // Only those that reached the limit can still turn out to be rarer than the best.
            candidates = counted.filter { $0.count == fewest }.map { ($0.name, $0.key) }
            if fewest < Int64(limit) || candidates.count < 2 { break }
        }
        return best
    }

    /// The item with `id`, if any.
    public func item(id: Int64) throws(StoreError) -> ItemRecord? {
        let found = try database.firstRow(Self.itemByID, [.integer(id)]) { row in
            (record: ItemRecord(row), sealed: row.blob(.sealed))
        }
        lastRead = found.flatMap { found in
            found.sealed.map {
                LastRead(id: found.record.id, collectionID: found.record.collectionID, changeCount: changeCount, sealed: $0)
            }
        }
        return found?.record
    }

    /// The record and the sealed contents of one item: a read of one item is nearly always
    /// followed by the opening of its secret (GetSecret reads the record, checks the caller's
    /// access to it, then opens it), and the row is read once for both.
    private static let itemByID = Query(
        Selection<ItemColumn>(ItemRecord.columns.columns + [.sealed]), "FROM items WHERE id = ?")

    /// The row ``item(id:)`` read last, with the ``changeCount`` it was read at: while that
    /// is unchanged, nothing has been written since, and ``readItem(_:in:keys:)`` opens its
    /// sealed contents without reading the row again (ciphertext, as in SQLite's page cache).
    private struct LastRead {
        var id: Int64
        var collectionID: Int64
        var changeCount: Int64
        var sealed: [UInt8]
    }
    private var lastRead: LastRead?

    /// When an item or a collection was created and last changed (seconds since 1970), for
    /// one brought over from another keyring; new ones get the present time.
    public struct Times: Sendable, Equatable {
        public var created: UInt64
        public var modified: UInt64
        public init(created: UInt64, modified: UInt64) {
            self.created = created
            self.modified = modified
        }
    }

    /// Creates an item in `collection`, sealed under the one of its `keys` that its class
    /// calls for, created now or at `times`.
    ///
    /// `creator` (a caller's identity) counts the item for that program's quota; with `quota`,
    /// an item that would take it, or the database, past the quota is refused (`.overQuota`)
    /// and not written.
    public func createItem(
        in collection: CollectionRecord, keys: ItemKeys, contents: ItemContents, times: Times? = nil, creator: String? = nil,
        within quota: Quota? = nil
    ) throws(StoreError) -> ItemRecord {
        let sealed = try Self.seal(contents, as: try reserveItemID(), in: collection, keys: keys)
        return try createItem(sealed, in: collection, times: times, creator: creator, within: quota)
    }

    /// Creates the item `sealed` holds (``seal(_:as:in:keys:)``, which can run on another
    /// thread) in `collection`, under the id it was sealed for, created and modified at
    /// `times`, else at the sealed item's own, else now. With `quota`, an item that
    /// would take its creator, or the database, past it is refused (`.overQuota`) and undone.
    public func createItem(
        _ sealed: SealedItem, in collection: CollectionRecord, times: Times? = nil, creator: String? = nil, within quota: Quota? = nil
    ) throws(StoreError) -> ItemRecord {
        guard sealed.collectionUUID == collection.uuid else { throw .invalidInput("the item was sealed for another keyring") }
        let now = Self.now()
        let created = (times ?? sealed.times)?.created ?? now
        let modified = (times ?? sealed.times)?.modified ?? now
        return try database.transaction { () throws(StoreError) -> ItemRecord in
            try database.insert([
                ItemColumn.id: .integer(sealed.id), .collectionID: .integer(collection.id), .created: .integer(Int64(created)),
                .modified: .integer(Int64(modified)), .sealed: .blob(sealed.bytes),
                .accessGroup: StoredAccessGroup.value(sealed.accessGroup), .survivesLock: sealed.survivesLock ? .integer(1) : .null,
                .creator: creator.map { .blob(Self.creatorKey($0)) } ?? .null,
            ])
            try index(sealed)
            if let quota { try check(quota, creator: creator.map(Self.creatorKey)) }
            return ItemRecord(
                id: sealed.id, collectionID: collection.id, created: created, modified: modified,
                accessGroup: sealed.accessGroup, survivesLock: sealed.survivesLock)
        }
    }

    /// An item's contents sealed for the row it will have (``createItem(_:in:times:creator:within:)``).
    public struct SealedItem: @unchecked Sendable {
        /// The id it was sealed for (``reserveItemID()``).
        public let id: Int64
        /// The collection it was sealed for.
        let collectionUUID: [UInt8]
        /// Label, attributes and secret, sealed.
        let bytes: [UInt8]
        /// The label, for the keyring's event.
        public let label: String
        /// The attributes, for the index and for the keyring's event.
        public let attributes: [String: String]
        /// The access group, kept in the clear.
        public let accessGroup: String?
        /// Whether it is sealed with the key kept after a lock.
        let survivesLock: Bool
        /// When it was created and last modified, when it is created (an imported item's own
        /// times); nil: now.
        public var times: Times?
    }

    /// An existing item's new contents, sealed, with what it replaces as it was read
    /// (``readItemAndVersion(_:in:keys:)``): for ``ApartWriter/writeItems(creating:in:replacing:creator:within:recording:)``.
    public struct SealedReplacement: Sendable {
        /// The new contents, sealed for `item`.
        public let sealed: SealedItem
        /// The item replaced, in `collection`.
        public let item: ItemRecord
        /// Its row's version when read: the write is refused if it changed.
        public let version: [UInt8]
        /// Its attributes when read, whose index entries go.
        public let previous: [String: String]
        /// Its collection.
        public let collection: CollectionRecord

        /// `item` of `collection`, read at `version` with attributes `previous`, to become `sealed`.
        public init(_ sealed: SealedItem, replacing item: ItemRecord, version: [UInt8], previous: [String: String], in collection: CollectionRecord) {
            (self.sealed, self.item, self.version, self.previous, self.collection) = (sealed, item, version, previous, collection)
        }
    }

    /// Seals `contents` for the item `id` of `collection` with the one of `keys` that its
    /// class needs (`.locked` when it is not among them). Touches no database: it may run on
    /// any thread while the store is used on its own.
    public static func seal(_ contents: ItemContents, as id: Int64, in collection: CollectionRecord, keys: ItemKeys) throws(StoreError)
        -> SealedItem
    {
        let survivesLock = contents.accessibility.survivesLock
        guard let key = keys.key(survivingLock: survivesLock) else { throw .locked }
        let plaintext = contents.encoded()
        let bytes = try StoreError.fromCrypto { () throws(CryptoError) in
            try plaintext.withBytes { (bytes) throws(CryptoError) in
                try Gcrypt.seal(bytes, key: key, associatedData: Self.itemAssociatedData(collection.uuid, id))
            }
        }
        return SealedItem(
            id: id, collectionUUID: collection.uuid, bytes: bytes, label: contents.label, attributes: contents.attributes,
            accessGroup: contents.accessGroup, survivesLock: survivesLock, times: nil)
    }

    /// An id no item has had, for an item to be sealed for before its row is written: above
    /// every id given so far (AUTOINCREMENT's record included), never handed out twice by this
    /// store, whether or not an item is then written with it.
    public func reserveItemID() throws(StoreError) -> Int64 {
        let next: Int64
        if let nextItemID {
            next = nextItemID
        } else {
            let row = try database.rows(
                "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'items'), 0), coalesce((SELECT max(id) FROM items), 0))")
            next = (row.first?.first?.integer ?? 0) + 1
        }
        nextItemID = next + 1
        return next
    }

    /// The id ``reserveItemID()`` gives next; nil until it first reads the database, and
    /// after the database was replaced.
    var nextItemID: Int64?

    /// Replaces an item's sealed contents (label, attributes, secret); `keys` must open both
    /// the item and what it becomes (its class may change). With `quota`, a change that would
    /// take the item's creator, or the database, past it is refused (`.overQuota`) and undone.
    public func updateItem(
        _ item: ItemRecord, in collection: CollectionRecord, keys: ItemKeys, contents: ItemContents, within quota: Quota? = nil
    ) throws(StoreError) -> ItemRecord {
        let now = max(Self.now(), item.modified)
        let sealed = try database.transaction { () throws(StoreError) -> SealedItem in
            let sealed = try write(item, in: collection, keys: keys, contents: contents, modified: now)
            if let quota { try check(quota, creator: try creatorKey(of: item)) }
            return sealed
        }
        return Self.record(of: item, rewrittenFrom: sealed, modified: now)
    }

    /// `item`'s record once its row holds `sealed`, written at `modified`.
    private static func record(of item: ItemRecord, rewrittenFrom sealed: SealedItem, modified: UInt64) -> ItemRecord {
        var updated = item
        updated.modified = modified
        updated.accessGroup = sealed.accessGroup
        updated.survivesLock = sealed.survivesLock
        return updated
    }

    /// Opens an item's sealed contents with the one of its collection's `keys` that seals it;
    /// `.locked` when that key is not among them.
    public func readItem(_ item: ItemRecord, in collection: CollectionRecord, keys: ItemKeys) throws(StoreError)
        -> ItemContents
    {
        try readItemAndVersion(item, in: collection, keys: keys).contents
    }

    /// The size of `item`'s sealed contents, in bytes (read without reading them).
    public func sealedByteCount(of item: ItemRecord) throws(StoreError) -> Int {
        let found = try database.rows("SELECT length(sealed) FROM items WHERE id = ?", [.integer(item.id)])
        guard case .integer(let count)? = found.first?.first else { throw .notFound }
        return Int(count)
    }

    /// As ``readItem(_:in:keys:)``, with the version of the row read: its seal's nonce, new
    /// with every write of the item (``updateItem(_:replacing:version:previous:in:within:)``).
    public func readItemAndVersion(_ item: ItemRecord, in collection: CollectionRecord, keys: ItemKeys) throws(StoreError)
        -> (contents: ItemContents, version: [UInt8])
    {
        guard let key = keys.key(survivingLock: item.survivesLock) else { throw .locked }
        let sealed: [UInt8]
        if let lastRead, lastRead.id == item.id, lastRead.collectionID == collection.id, lastRead.changeCount == changeCount {
            sealed = lastRead.sealed
        } else {
            let found = try database.firstRow(Self.sealedContents, [.integer(item.id), .integer(collection.id)]) { $0.blob(.sealed) }
            guard let found, let read = found else { throw .notFound }
            sealed = read
        }
        return (try Self.openSealed(sealed, of: item, in: collection, key: key), Array(sealed.prefix(Gcrypt.nonceLength)))
    }

    /// The contents `sealed`, the row of `item`, holds, opened with `key`.
    private static func openSealed(_ sealed: [UInt8], of item: ItemRecord, in collection: CollectionRecord, key: SecureBytes) throws(StoreError)
        -> ItemContents
    {
        let plaintext = try StoreError.fromCrypto { () throws(CryptoError) in
            try Gcrypt.open(sealed, key: key, associatedData: Self.itemAssociatedData(collection.uuid, item.id))
        }
        return try ItemContents.decode(plaintext)
    }

    private static let sealedContents = Query(
        Selection<ItemColumn>([.sealed]), "FROM items WHERE id = ? AND collection_id = ?")
    /// The version of an item's row (``readItemAndVersion(_:in:keys:)``): its seal's nonce.
    private static let sealedVersion = "SELECT substr(sealed, 1, \(Gcrypt.nonceLength)) FROM items WHERE id = ? AND collection_id = ?"

    /// Records the access group of items written before schema version 2 (which kept it only
    /// in the sealed attributes); returns how many were assigned. Runs when `collection` is
    /// unlocked, before anything reads its items.
    @discardableResult
    public func assignAccessGroups(in collection: CollectionRecord, keys: ItemKeys) throws(StoreError) -> Int {
        let pending = try database.rows(Self.itemsWithoutGroup, [.integer(collection.id)], ItemRecord.init)
        guard !pending.isEmpty else { return 0 }
        try database.transaction { () throws(StoreError) in
            for item in pending {
                let group = try readItem(item, in: collection, keys: keys).accessGroup
                try database.update([ItemColumn.accessGroup: StoredAccessGroup.value(group)], where: .id, is: .integer(item.id))
            }
        }
        return pending.count
    }

    private static let itemsWithoutGroup = Query(
        ItemRecord.columns, "FROM items WHERE collection_id = ? AND " + StoredAccessGroup.unknownCondition("access_group"))

    /// Deletes an item of `collection` with its index entries, which its attributes, opened
    /// with the one of `keys` that seals it, name. Returns its label and attributes as they
    /// were (nil when its sealed contents did not open: a damaged row is deleted all the same).
    @discardableResult
    public func deleteItem(_ item: ItemRecord, in collection: CollectionRecord, keys: ItemKeys) throws(StoreError)
        -> (label: String, attributes: [String: String])?
    {
        guard keys.opens(item) else { throw .locked }
        return try database.transaction { () throws(StoreError) in
            let described = try removeIndexEntries(of: item, in: collection, keys: keys)
            try database.run("DELETE FROM items WHERE id = ?", [.integer(item.id)])
            return described
        }
    }

    // MARK: - Internals

    /// Seals `contents` into the existing item's row, with the key its class calls for (`keys`
    /// must open what it held too), and indexes its attributes instead of the old ones; the row written.
    @discardableResult
    private func write(
        _ item: ItemRecord, in collection: CollectionRecord, keys: ItemKeys, contents: ItemContents, modified: UInt64
    ) throws(StoreError) -> SealedItem {
        guard keys.opens(item) else { throw .locked }
        let sealed = try Self.seal(contents, as: item.id, in: collection, keys: keys)
        try removeIndexEntries(of: item, in: collection, keys: keys)
        try write(sealed, modified: modified)
        return sealed
    }

    /// Writes the row and index entries of the item `sealed` is for, whose old entries are gone.
    private func write(_ sealed: SealedItem, modified: UInt64) throws(StoreError) {
        try database.update(
            [ItemColumn.sealed: .blob(sealed.bytes), .modified: .integer(Int64(modified)),
             .accessGroup: StoredAccessGroup.value(sealed.accessGroup), .survivesLock: sealed.survivesLock ? .integer(1) : .null],
            where: .id, is: .integer(sealed.id))
        try index(sealed)
    }

    /// Gives `item` the contents `sealed` holds (sealed for it: ``seal(_:as:in:keys:)``); its
    /// row had `version` (``readItemAndVersion(_:in:keys:)``) and attributes `previous`,
    /// whose index entries are removed; as ``updateItem(_:in:keys:contents:within:)`` otherwise.
    /// Refuses it (`.notFound`) when the item is gone or was written since that version, so
    /// that nothing written meanwhile is lost.
    func updateItem(
        _ sealed: SealedItem, replacing item: ItemRecord, version: [UInt8], previous: [String: String],
        in collection: CollectionRecord, within quota: Quota?
    ) throws(StoreError) -> ItemRecord {
        guard sealed.id == item.id, sealed.collectionUUID == collection.uuid else {
            throw .invalidInput("the item was sealed for another item")
        }
        let now = max(Self.now(), item.modified)
        try database.transaction { () throws(StoreError) in
            let found = try database.rows(Self.sealedVersion, [.integer(item.id), .integer(collection.id)])
            guard case .blob(let current)? = found.first?.first, current == version else { throw .notFound }
            try removeIndexEntries(of: item.id, attributes: previous)
            try write(sealed, modified: now)
            if let quota { try check(quota, creator: try creatorKey(of: item)) }
        }
        return Self.record(of: item, rewrittenFrom: sealed, modified: now)
    }

    /// Indexes the attributes of the item `sealed` is for.
    private func index(_ sealed: SealedItem) throws(StoreError) {
        for (name, value) in sealed.attributes {
            try database.insert(
                [IndexColumn.hash: .blob(Self.attributeKey(name: name, value: value)), .itemID: .integer(sealed.id)],
                onConflict: .ignore)
        }
    }

    /// Removes an item's index entries: those of the attributes its sealed contents hold or,
    /// when they do not open (a damaged row), every entry naming it, found by a scan.
    /// Returns the label and attributes it found (nil when the contents did not open).
    @discardableResult
    private func removeIndexEntries(of item: ItemRecord, in collection: CollectionRecord, keys: ItemKeys)
        throws(StoreError) -> (label: String, attributes: [String: String])?
    {
        let contents: ItemContents
        do {
            contents = try readItem(item, in: collection, keys: keys)
        } catch .notFound {
            return nil
        } catch {
            try database.run("DELETE FROM attribute_index WHERE item_id = ?", [.integer(item.id)])
            return nil
        }
        try removeIndexEntries(of: item.id, attributes: contents.attributes)
        return (contents.label, contents.attributes)
    }

    /// Removes the index entries of the item `id` for `attributes`.
    private func removeIndexEntries(of id: Int64, attributes: [String: String]) throws(StoreError) {
        for (name, value) in attributes {
            try database.run(
                "DELETE FROM attribute_index WHERE hash = ? AND item_id = ?", [.blob(Self.attributeKey(name: name, value: value)), .integer(id)])
        }
    }

    // MARK: - Quotas

    /// What the program `creator` (a caller's identity, `exe:/usr/bin/tool`) has stored: its
    /// items and their sealed bytes, as the triggers of schema version 7 count them.
    public func usage(of creator: String) throws(StoreError) -> (items: Int, bytes: Int) {
        let found = try database.firstRow(Self.creatorUsage, [.blob(Self.creatorKey(creator))]) { row in
            (items: Int(row.integer(.items) ?? 0), bytes: Int(row.integer(.bytes) ?? 0))
        }
        return found ?? (0, 0)
    }

    private static let creatorUsage = Query(Selection<CreatorUsageColumn>([.items, .bytes]), "FROM creator_usage WHERE creator = ?")

    /// The creator key of `item`, when it counts for one.
    private func creatorKey(of item: ItemRecord) throws(StoreError) -> [UInt8]? {
        let found = try database.firstRow(Self.itemCreator, [.integer(item.id)]) { row in row.blob(.creator) }
        return found ?? nil
    }

    private static let itemCreator = Query(Selection<ItemColumn>([.creator]), "FROM items WHERE id = ?")

    /// Refuses, inside the write's own transaction (so that it is undone), a write that took
    /// the program `creator` (its key), or the whole database, past `quota`.
    func check(_ quota: Quota, creator: [UInt8]?) throws(StoreError) {
        if let creator {
            let found = try database.firstRow(Self.creatorUsage, [.blob(creator)]) { row in
                (items: Int(row.integer(.items) ?? 0), bytes: Int(row.integer(.bytes) ?? 0))
            }
            if let found, found.items > quota.items { throw .overQuota(.items(quota.items)) }
            if let found, found.bytes > quota.bytes { throw .overQuota(.bytes(quota.bytes)) }
        }
        if try databaseSize() > quota.databaseBytes { throw .overQuota(.database(quota.databaseBytes)) }
    }

    /// The size of the database file, in bytes (its pages; the write-ahead log aside).
    public func databaseSize() throws(StoreError) -> Int {
        let pages = try database.rows("PRAGMA page_count").first?.first?.integer ?? 0
        let size = try database.rows("PRAGMA page_size").first?.first?.integer ?? 0
        return Int(pages * size)
    }

    /// How `items.creator` and `creator_usage` name a program: the first 8 bytes of SHA-256 over
    /// a domain label and its identity, as attributes are indexed (a copy of the file tells
    /// whether a given program created an item, as it tells a given attribute; secretd(1)).
    public static func creatorKey(_ creator: String) -> [UInt8] {
        Array(Gcrypt.sha256(creatorDomain + Array(creator.utf8)).prefix(attributeKeySize))
    }

    /// The domain label a creator's hash starts with.
    private static let creatorDomain = Array("secretd-creator-v1\u{0}".utf8)

    /// Bytes of an index key: 64 bits make an accidental match between two of a user's
    /// attributes about as likely as a disk error.
    static let attributeKeySize = 8

    /// The index key of one attribute: the first 8 bytes of SHA-256 over a domain label, the
    /// name and the value (schema version 2 kept all 32; version 3 keeps their prefix).
    static func attributeKey(name: String, value: String) -> [UInt8] {
        Array(attributeHash(name: name, value: value).prefix(attributeKeySize))
    }

    /// The full hash an ``attributeKey(name:value:)`` is cut from (what schema version 2 stored).
    static func attributeHash(name: String, value: String) -> [UInt8] {
        var input = attributeDomain
        input.reserveCapacity(attributeDomain.count + name.utf8.count + 1 + value.utf8.count)
        input.append(contentsOf: name.utf8)
        input.append(0)
        input.append(contentsOf: value.utf8)
        return Gcrypt.sha256(input)
    }

    /// The domain label an attribute's hash starts with.
    private static let attributeDomain = Array("secretd-attribute-v1\u{0}".utf8)

    /// Associated data binding a sealed item to its collection and row.
    static func itemAssociatedData(_ uuid: [UInt8], _ id: Int64) -> [UInt8] {
        Array("secretd-item-v1".utf8) + uuid + withUnsafeBytes(of: id.bigEndian) { Array($0) }
    }

    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970) }
}
