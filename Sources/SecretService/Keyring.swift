import KeychainCore
import SecretCrypto
import SecretStore

/// The keyrings under the D-Bus objects: the store, the keys of the unlocked collections, and
/// the one place that changes items, collections and locks. Each change publishes one
/// ``KeyringEvent`` to the subscribers (signals, sync, the items schedule), so a handler makes
/// its change with one call and tells nobody itself.
///
/// Runs on the main loop's thread only, as the daemon does.
final class Keyring {
    /// The encrypted database: the keyring's, and sync's for its own tables
    /// (``SyncCoordinator``); the D-Bus objects read and write through the keyring.
    let store: Store
    /// The keys of the unlocked collections.
    private let keys = MasterKeys()
    /// Told every event, in the order they subscribed.
    private var subscribers: [(KeyringEvent) -> Void] = []
    /// Events of a ``transaction(_:)`` under way, published when it lands (nil: none open).
    private var heldEvents: [KeyringEvent]?
    /// Who asked for what the keyring does now (``acting(as:_:)``); secretd itself between requests.
    private(set) var accessor = Accessor.secretd
    /// Whether a write off the loop is in progress; what writes on the loop outside a call
    /// waits for it (``ApartWriteGate/whenWriteEnds(_:)``).
    let apartWrites = ApartWriteGate()

    /// A keyring over `store`, every collection locked.
    init(store: Store) {
        self.store = store
    }

    /// Tells `subscriber` every event from now on.
    func subscribe(_ subscriber: @escaping (KeyringEvent) -> Void) {
        subscribers.append(subscriber)
    }

    /// Runs `body` for `accessor`: the events it publishes are theirs.
    func acting<T, E: Error>(as accessor: Accessor, _ body: () throws(E) -> T) throws(E) -> T {
        let outer = self.accessor
        self.accessor = accessor
        defer { self.accessor = outer }
        return try body()
    }

    /// Publishes that the accessor was refused `refusal` (the audit trail records it).
    func refused(_ refusal: AccessRefusal) {
        publish(.refused(refusal))
    }

    private func publish(_ event: KeyringEvent) {
        if heldEvents != nil {
            heldEvents?.append(event)
            return
        }
        for subscriber in subscribers { subscriber(event) }
    }

    /// Runs `body` as one transaction (``Store/transaction(_:)``): its changes land together and
    /// their events are published once it has, or neither happens.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        precondition(heldEvents == nil, "keyring transactions do not nest")
        heldEvents = []
        let result: T
        do {
            result = try store.transaction(body)
        } catch {
            // What it created is gone: so are the keys kept for it.
            for case .collectionCreated(let collection) in heldEvents ?? [] { keys.forget(collection.id) }
            heldEvents = nil
            throw error
        }
        let events = heldEvents ?? []
        heldEvents = nil
        for event in events { publish(event) }
        return result
    }

    // MARK: - Keys

    /// The keys of collection `id` while it is unlocked; nil while it is locked.
    subscript(id: Int64) -> Store.ItemKeys? { keys[id] }

    /// The keys that open `item`: its collection's while unlocked, and after an ordinary lock
    /// the kept key of an after-first-unlock item.
    func opening(_ item: Store.ItemRecord) -> Store.ItemKeys? { keys.opening(item) }

    /// Whatever keys are held for collection `id`, unlocked or not (nil: none at all).
    func held(_ id: Int64) -> Store.ItemKeys? { keys.held(id) }

    /// Whether `collection` is locked.
    func isLocked(_ collection: Store.CollectionRecord) -> Bool { keys[collection.id] == nil }

    /// For an item of `collection` sealed off the loop with `keys` (``SealingQueue``): the keys
    /// held now, and whether they are those same key objects (not wiped by a lock and derived
    /// again since); or why it cannot be stored at all (the keyring deleted or locked meanwhile).
    func keysAfterSealing(
        in collection: Store.CollectionRecord, sealedWith keys: Store.ItemKeys
    ) -> Result<(current: Store.ItemKeys, same: Bool), SecretServiceError> {
        let present = (try? collections())?.contains { $0.id == collection.id && $0.uuid == collection.uuid } ?? false
        guard present else { return .failure(.noSuchObject("the collection was deleted while the item was written")) }
        guard let current = held(collection.id) else { return .failure(.isLocked("the keyring is locked")) }
        return .success((current, current.master === keys.master && current.afterFirstUnlock === keys.afterFirstUnlock))
    }

    // MARK: - Reading

    /// How many rows the store has changed so far (a read of it is current while this stays).
    var changeCount: Int64 { store.changeCount }

    /// Every collection.
    func collections() throws(StoreError) -> [Store.CollectionRecord] { try store.collections() }

    /// The collection called `name`, if there is one.
    func collection(named name: String) throws(StoreError) -> Store.CollectionRecord? { try store.collection(named: name) }

    /// Every alias and the name of the collection it points at.
    func aliases() throws(StoreError) -> [String: String] { try store.aliases() }

    /// The item `id`, if there is one.
    func item(id: Int64) throws(StoreError) -> Store.ItemRecord? { try store.item(id: id) }

    /// The items with all of `attributes`, in `collection` or in every collection.
    func search(_ attributes: [String: String], in collection: Store.CollectionRecord? = nil) throws(StoreError) -> [Store.ItemRecord] {
        try store.search(attributes, in: collection)
    }

    // MARK: - Checks and backups

    /// What SQLite's integrity check finds wrong with the database (empty: nothing).
    func integrityProblems() throws(StoreError) -> [String] { try store.integrityProblems() }

    /// Opens every item of `collection` that `itemKeys` can open; writes nothing.
    func checkSeals(of collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys) throws(StoreError) -> Store.SealCheck {
        try store.checkSeals(of: collection, keys: itemKeys)
    }

    /// A verified copy of the whole database at `path` (``Store/backup(to:replacing:keys:)``),
    /// each collection's items opened with the keys `keys` gives for it.
    func backup(
        to path: String, replacing: Bool, keys: (Store.CollectionRecord) -> Store.ItemKeys?
    ) throws(StoreError) -> Store.BackupReport {
        try store.backup(to: path, replacing: replacing, keys: keys)
    }

    /// Replaces the whole store with the backup at `path`, the current data kept at `previous`
    /// (``Store/restore(from:keepingCurrentAt:keys:)``, which checks the backup's items with
    /// `keys`). Once it has landed every key is forgotten (they were for the data replaced) and
    /// the change is published: each collection still there that was unlocked as `.locked`,
    /// each one gone (or another under its name) as `.collectionDeleted`, one relabelled as
    /// `.collectionRelabelled`, then `.restored` with those that appeared. Refused, nothing
    /// changes and nothing is published.
    func restore(
        from path: String, keepingCurrentAt previous: String, keys check: (Store.CollectionRecord) -> Store.ItemKeys?
    ) throws(StoreError) -> Store.BackupReport {
        precondition(heldEvents == nil, "a restore is not part of a transaction")
        let before = try store.collections()
        let unlockedBefore = before.filter { keys[$0.id] != nil }
        func same(_ one: Store.CollectionRecord, _ other: Store.CollectionRecord) -> Bool {
            one.id == other.id && one.uuid == other.uuid && one.name == other.name
        }
        let report: Store.BackupReport
        do {
            report = try store.restore(from: path, keepingCurrentAt: previous, keys: check)
        } catch {
            // Refused before the copy, nothing changed. Failed after it (bringing the schema up to
            // date), the data is the backup's: the keys held are not for it.
            let now = (try? store.collections()) ?? []
            if now.count != before.count || !now.allSatisfy({ collection in before.contains { same($0, collection) } }) {
                replaced(before: before, unlockedBefore: unlockedBefore, same: same)
            }
            throw error
        }
        replaced(before: before, unlockedBefore: unlockedBefore, same: same)
        return report
    }

    /// After the data was replaced: forgets every key and publishes what changed (``restore(from:keepingCurrentAt:keys:)``).
    private func replaced(
        before: [Store.CollectionRecord], unlockedBefore: [Store.CollectionRecord],
        same: (Store.CollectionRecord, Store.CollectionRecord) -> Bool
    ) {
        keys.removeAll()
        let after = (try? store.collections()) ?? []
        for collection in unlockedBefore where after.contains(where: { same($0, collection) }) { publish(.locked(collection)) }
        for collection in before where !after.contains(where: { same($0, collection) }) { publish(.collectionDeleted(collection)) }
        for collection in after {
            if let old = before.first(where: { same($0, collection) }), old.label != collection.label {
                publish(.collectionRelabelled(collection, label: collection.label))
            }
        }
        publish(.restored(appeared: after.filter { collection in !before.contains { same($0, collection) } }))
    }

    /// `item`'s contents, opened with `itemKeys`.
    func readItem(_ item: Store.ItemRecord, in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys) throws(StoreError)
        -> ItemContents
    {
        try store.readItem(item, in: collection, keys: itemKeys)
    }

    /// As ``readItem(_:in:keys:)``, with the version of the row read (``Store/readItemAndVersion(_:in:keys:)``).
    func readItemAndVersion(_ item: Store.ItemRecord, in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys)
        throws(StoreError) -> (contents: ItemContents, version: [UInt8])
    {
        try store.readItemAndVersion(item, in: collection, keys: itemKeys)
    }

    /// `item`'s contents, opened with `itemKeys`, to hand its secret to the accessor through
    /// `route`: published as read (the audit trail records it). Reads that keep the secret in
    /// secretd (a label, a change) use ``readItem(_:in:keys:)``.
    func readSecret(
        _ item: Store.ItemRecord, in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys, route: String
    ) throws(StoreError) -> ItemContents {
        let contents = try store.readItem(item, in: collection, keys: itemKeys)
        publish(.secretRead(item, in: collection, label: contents.label, attributes: contents.attributes, route: route))
        return contents
    }

    // MARK: - Locking

    /// Keeps the keys that opened `collection` (a password, a PIN, the TPM, a master key given
    /// at start): it is unlocked from now on, published if it was locked.
    /// Keys for a collection no longer in the store under the same id and uuid (a restore
    /// replaced it while its password was checked) are not kept.
    func unlocked(_ collection: Store.CollectionRecord, with itemKeys: Store.ItemKeys) {
        guard let current = try? store.collections(), current.contains(where: { $0.id == collection.id && $0.uuid == collection.uuid })
        else {
            Log.info("the \(collection.name) keyring was replaced while it was being unlocked; it stays locked")
            return
        }
        if keys.unlocked(collection, with: itemKeys) { publish(.unlocked(collection)) }
    }

    /// Unlocks `collection` with `password`, deriving its key on this thread (at start, before
    /// the daemon serves; every other password goes through ``PasswordChecks`` off the loop).
    func unlock(_ collection: Store.CollectionRecord, password: SecureBytes) throws(StoreError) {
        unlocked(collection, with: try store.unlock(collection, password: password))
    }

    /// Locks `collection` (the session keyring stays open); with `keepingAfterFirstUnlock`
    /// false, its after-first-unlock items too. Returns whether anything was forgotten.
    @discardableResult
    func lock(_ collection: Store.CollectionRecord, keepingAfterFirstUnlock: Bool = true) -> Bool {
        guard collection.name != SecretServiceNames.sessionCollection else { return false }
        let (wasUnlocked, forgot) = keys.lock(collection, keepingAfterFirstUnlock: keepingAfterFirstUnlock)
        if wasUnlocked { publish(.locked(collection)) }
        return forgot
    }

    /// Locks every keyring it holds keys for, except the session one, and returns those it
    /// locked. Found from the keys held, not from the store, so a failed read cannot leave one
    /// open.
    func lockAll(keepingAfterFirstUnlock: Bool = true) -> [Store.CollectionRecord] {
        keys.collectionsWithKeys.filter { lock($0, keepingAfterFirstUnlock: keepingAfterFirstUnlock) }
    }

    /// Forgets every key (secretd stops); nothing is published.
    func forgetAllKeys() {
        keys.removeAll()
    }

    // MARK: - Collections

    /// Creates a collection with a key made beforehand, unlocked, and publishes it.
    func createCollection(
        name: String, label: String, key: NewCollectionKey, times: Store.Times? = nil
    ) throws(StoreError) -> (Store.CollectionRecord, Store.ItemKeys) {
        let (collection, itemKeys) = try store.createCollection(name: name, label: label, key: key, times: times)
        _ = keys.unlocked(collection, with: itemKeys)
        publish(.collectionCreated(collection))
        return (collection, itemKeys)
    }

    /// Deletes `collection` and its items, forgets its keys, and publishes it.
    func deleteCollection(_ collection: Store.CollectionRecord) throws(StoreError) {
        try store.deleteCollection(collection)
        keys.forget(collection.id)
        publish(.collectionDeleted(collection))
    }

    /// Relabels `collection` and publishes it.
    func setLabel(_ label: String, of collection: Store.CollectionRecord) throws(StoreError) {
        try store.setLabel(label, of: collection)
        publish(.collectionRelabelled(collection, label: label))
    }

    /// Points `alias` at `collection` (nil: removes it).
    func setAlias(_ alias: String, to collection: Store.CollectionRecord?) throws(StoreError) {
        try store.setAlias(alias, to: collection)
    }

    /// Keeps `wrapped` as `collection`'s master key under its new password.
    func setWrappedKey(of collection: Store.CollectionRecord, to wrapped: WrappedKey) throws(StoreError) {
        try store.setWrappedKey(of: collection, to: wrapped)
    }

    // MARK: - Items

    /// Creates an item in `collection` with `itemKeys` (held for it) and publishes it.
    /// `creator` counts it for that program's quota, checked with `quota`.
    func createItem(
        in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys, contents: ItemContents,
        times: Store.Times? = nil, creator: String? = nil, within quota: Store.Quota? = nil
    ) throws(StoreError) -> Store.ItemRecord {
        let item = try store.createItem(
            in: collection, keys: itemKeys, contents: contents, times: times, creator: creator, within: quota)
        publish(.itemCreated(item, in: collection, label: contents.label, attributes: contents.attributes))
        return item
    }

    /// Creates the item `sealed` holds (``Store/seal(_:as:in:keys:)``) in `collection` and
    /// publishes it; as ``createItem(in:keys:contents:times:creator:within:)`` otherwise.
    func createItem(
        _ sealed: Store.SealedItem, in collection: Store.CollectionRecord, creator: String? = nil, within quota: Store.Quota? = nil
    ) throws(StoreError) -> Store.ItemRecord {
        let item = try store.createItem(sealed, in: collection, creator: creator, within: quota)
        publish(.itemCreated(item, in: collection, label: sealed.label, attributes: sealed.attributes))
        return item
    }

    /// Publishes `item`, which the store's second connection created from `sealed` off the
    /// loop (``Store/ApartWriter``), as ``createItem(_:in:creator:within:)`` would have;
    /// `recorded`: the write's transaction recorded it (``recording(_:)``).
    func createdApart(_ item: Store.ItemRecord, from sealed: Store.SealedItem, in collection: Store.CollectionRecord, recorded: Bool) {
        store.noteWrittenApart()  // what follows, the subscribers and the next calls read it
        publishing(recorded: recorded) {
            publish(.itemCreated(item, in: collection, label: sealed.label, attributes: sealed.attributes))
        }
    }

    /// Publishes the change of `before` into `after`, which the store's second connection
    /// wrote from `sealed` off the loop (``Store/ApartWriter``), as ``updateItem(_:in:keys:contents:within:)`` would have;
    /// `recorded`: the write's transaction recorded it (``recording(_:)``).
    func updatedApart(
        _ before: Store.ItemRecord, into after: Store.ItemRecord, from sealed: Store.SealedItem, in collection: Store.CollectionRecord,
        recorded: Bool
    ) {
        store.noteWrittenApart()
        publishing(recorded: recorded) {
            publish(.itemChanged(before: before, after: after, label: sealed.label, attributes: sealed.attributes, in: collection))
        }
    }

    // MARK: - Recording writes made off the loop

    /// An item about to be written off the loop (``Store/ApartWriter``): its sealed row, its
    /// collection, and whether it is new (else it replaces the item of its id).
    struct ApartItemWrite {
        let sealed: Store.SealedItem
        let collection: Store.CollectionRecord
        let isNew: Bool
    }

    /// The subscriber that records item writes in the store itself (the audit trail).
    private var apartRecorder: (([ApartItemWrite]) -> ApartWriter.Recording?)?

    /// Has `recorder` (the audit trail) asked, before items are written off the loop, for the
    /// work that records them in that write's own transaction, so that a write and its record
    /// are durable together and the loop does not write the record after it; nil: it records
    /// them as any write, when their events are published.
    func recordApartWrites(with recorder: @escaping ([ApartItemWrite]) -> ApartWriter.Recording?) {
        apartRecorder = recorder
    }

    /// The work that records `writes` in the transaction that makes them, if the recorder
    /// gives any; their events are then published as recorded (``publishingRecorded``).
    func recording(_ writes: [ApartItemWrite]) -> ApartWriter.Recording? { apartRecorder?(writes) }

    /// Whether the item events published now are of writes the recorder recorded in their
    /// own transaction (``recording(_:)``): it does not record them again.
    private(set) var publishingRecorded = false

    private func publishing(recorded: Bool, _ body: () -> Void) {
        publishingRecorded = recorded
        defer { publishingRecorded = false }
        body()
    }

    /// Gives `item` new `contents` and publishes the change.
    func updateItem(
        _ item: Store.ItemRecord, in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys,
        contents: ItemContents, within quota: Store.Quota? = nil
    ) throws(StoreError) -> Store.ItemRecord {
        let updated = try store.updateItem(item, in: collection, keys: itemKeys, contents: contents, within: quota)
        publish(.itemChanged(before: item, after: updated, label: contents.label, attributes: contents.attributes, in: collection))
        return updated
    }

    /// Deletes `item` and publishes it.
    func deleteItem(_ item: Store.ItemRecord, in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys) throws(StoreError) {
        let described = try store.deleteItem(item, in: collection, keys: itemKeys)
        publish(.itemDeleted(item, in: collection, label: described?.label, attributes: described?.attributes))
    }
}
