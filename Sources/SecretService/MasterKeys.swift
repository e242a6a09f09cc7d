public import SecretCrypto
public import SecretStore

/// The keys of the unlocked collections, by collection id, and the one place that announces a
/// collection's `Locked` changing: every unlock and lock goes through here.
///
/// An ordinary lock (idle time, suspend, screen lock, a client's `Lock`) forgets a collection's
/// master key but keeps the key of its `after-first-unlock` items (``Store/ItemKeys``), so those
/// stay readable; ``lock(_:keepingAfterFirstUnlock:)`` with `false` (`secretctl lock --all`)
/// and secretd's exit forget both.
final class MasterKeys {
    private var keys: [Int64: Store.ItemKeys] = [:]
    /// Told each change of a collection's `Locked` (`true` when it locked); set once the
    /// daemon serves the bus.
    var announce: ((Store.CollectionRecord, _ locked: Bool) -> Void)?

    /// The keys of collection `id` while it is unlocked; nil while it is locked.
    subscript(id: Int64) -> Store.ItemKeys? {
        guard let held = keys[id], held.master != nil else { return nil }
        return held
    }

    /// The keys held for `item`'s collection if they open it: always while the collection is
    /// unlocked, and after an ordinary lock for an item that survives it.
    func opening(_ item: Store.ItemRecord) -> Store.ItemKeys? {
        guard let held = keys[item.collectionID], held.opens(item) else { return nil }
        return held
    }

    /// Whatever keys are held for collection `id`, unlocked or not (nil: none at all).
    func held(_ id: Int64) -> Store.ItemKeys? { keys[id] }

    /// Keeps `itemKeys` for `collection`, which is unlocked from now on; announced unless it
    /// was unlocked already or `announcing` is false (a collection just created, which nobody
    /// saw locked).
    func unlocked(_ collection: Store.CollectionRecord, with itemKeys: Store.ItemKeys, announcing: Bool = true) {
        let wasLocked = self[collection.id] == nil
        keys[collection.id] = itemKeys
        if wasLocked && announcing { announce?(collection, false) }
    }

    /// Forgets `collection`'s master key and announces it locked; with
    /// `keepingAfterFirstUnlock` false the key of its `after-first-unlock` items goes too.
    /// False when nothing changed.
    @discardableResult
    func lock(_ collection: Store.CollectionRecord, keepingAfterFirstUnlock: Bool = true) -> Bool {
        guard let held = keys[collection.id] else { return false }
        let wasUnlocked = held.master != nil
        keys[collection.id] = keepingAfterFirstUnlock ? held.withoutMaster : nil
        if wasUnlocked { announce?(collection, true) }
        return wasUnlocked || !keepingAfterFirstUnlock
    }

    /// Forgets the keys of a collection that was deleted (nothing to announce).
    func forget(_ collectionID: Int64) {
        keys[collectionID] = nil
    }

    /// Forgets every key, when the daemon stops.
    func removeAll() {
        keys.removeAll()
    }
}
