public import SecretCrypto
public import SecretStore

/// The keys of the unlocked collections, by collection id, with the collection each opens.
/// Only ``Keyring`` changes them (and publishes each lock and unlock).
///
/// An ordinary lock (idle time, suspend, screen lock, a client's `Lock`) forgets a collection's
/// master key but keeps the key of its `after-first-unlock` items (``Store/ItemKeys``), so those
/// stay readable; ``lock(_:keepingAfterFirstUnlock:)`` with `false` (`secretctl lock --all`)
/// and secretd's exit forget both.
final class MasterKeys {
    /// What is held for one collection.
    private struct Held {
        var collection: Store.CollectionRecord
        var keys: Store.ItemKeys
    }

    private var held: [Int64: Held] = [:]

    /// The keys of collection `id` while it is unlocked; nil while it is locked.
    subscript(id: Int64) -> Store.ItemKeys? {
        guard let found = held[id]?.keys, found.master != nil else { return nil }
        return found
    }

    /// The keys held for `item`'s collection if they open it: always while the collection is
    /// unlocked, and after an ordinary lock for an item that survives it.
    func opening(_ item: Store.ItemRecord) -> Store.ItemKeys? {
        guard let found = held[item.collectionID]?.keys, found.opens(item) else { return nil }
        return found
    }

    /// Whatever keys are held for collection `id`, unlocked or not (nil: none at all).
    func held(_ id: Int64) -> Store.ItemKeys? { held[id]?.keys }

    /// The collections whose master key is held, by name.
    var unlockedCollections: [Store.CollectionRecord] {
        held.values.filter { $0.keys.master != nil }.map(\.collection).sorted { $0.name < $1.name }
    }

    /// Every collection some key is held for (an unlocked one, or after-first-unlock items of a
    /// locked one), by name.
    var collectionsWithKeys: [Store.CollectionRecord] {
        held.values.map(\.collection).sorted { $0.name < $1.name }
    }

    /// Keeps `itemKeys` for `collection`, which is unlocked from now on. Returns whether it was
    /// locked.
    func unlocked(_ collection: Store.CollectionRecord, with itemKeys: Store.ItemKeys) -> Bool {
        let wasLocked = self[collection.id] == nil
        held[collection.id] = Held(collection: collection, keys: itemKeys)
        return wasLocked
    }

    /// Forgets `collection`'s master key; with `keepingAfterFirstUnlock` false the key of its
    /// `after-first-unlock` items goes too. Returns whether it was unlocked, and whether
    /// anything was forgotten at all.
    func lock(_ collection: Store.CollectionRecord, keepingAfterFirstUnlock: Bool) -> (wasUnlocked: Bool, forgot: Bool) {
        guard let found = held[collection.id] else { return (false, false) }
        let wasUnlocked = found.keys.master != nil
        if keepingAfterFirstUnlock {
            held[collection.id]?.keys = found.keys.withoutMaster
        } else {
            held[collection.id] = nil
        }
        return (wasUnlocked, wasUnlocked || !keepingAfterFirstUnlock)
    }

    /// Forgets the keys of collection `id` (deleted).
    func forget(_ collectionID: Int64) {
        held[collectionID] = nil
    }

    /// Forgets every key, when the daemon stops.
    func removeAll() {
        held.removeAll()
    }
}
