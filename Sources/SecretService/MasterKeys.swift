public import SecretCrypto
public import SecretStore

/// The master keys of the unlocked collections, by collection id, and the one place that
/// announces a collection's `Locked` changing: every unlock and lock goes through here.
final class MasterKeys {
    private var keys: [Int64: SecureBytes] = [:]
    /// Told each change of a collection's `Locked` (`true` when it locked); set once the
    /// daemon serves the bus.
    var announce: ((Store.CollectionRecord, _ locked: Bool) -> Void)?

    /// The key of collection `id`; nil while it is locked.
    subscript(id: Int64) -> SecureBytes? { keys[id] }

    /// Keeps `key` for `collection`, which is unlocked from now on; announced unless it was
    /// unlocked already or `announcing` is false (a collection just created, which nobody
    /// saw locked).
    func unlocked(_ collection: Store.CollectionRecord, with key: SecureBytes, announcing: Bool = true) {
        let wasLocked = keys[collection.id] == nil
        keys[collection.id] = key
        if wasLocked && announcing { announce?(collection, false) }
    }

    /// Forgets `collection`'s key and announces it locked; false when it was locked already.
    @discardableResult
    func lock(_ collection: Store.CollectionRecord) -> Bool {
        guard keys.removeValue(forKey: collection.id) != nil else { return false }
        announce?(collection, true)
        return true
    }

    /// Forgets the key of a collection that was deleted (nothing to announce).
    func forget(_ collectionID: Int64) {
        keys[collectionID] = nil
    }

    /// Forgets every key, when the daemon stops.
    func removeAll() {
        keys.removeAll()
    }
}
