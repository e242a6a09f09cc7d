public import SecretCrypto

extension Store {
    /// The keys that open a collection's items. Items of a class that survives a lock
    /// (`after-first-unlock`) are sealed with a key derived one way from the master key, so
    /// that after an ordinary lock secretd can keep that key alone: it opens those items and
    /// no others, and nothing in it leads back to the master key.
    public struct ItemKeys: Sendable {
        /// The collection's master key; nil after an ordinary lock, when only ``afterFirstUnlock`` is kept.
        public let master: SecureBytes?
        /// The key of the items that survive a lock.
        public let afterFirstUnlock: SecureBytes

        /// Both keys of the collection whose master key is `master`.
        public init(master: SecureBytes) throws(StoreError) {
            self.master = master
            afterFirstUnlock = try StoreError.fromCrypto { () throws(CryptoError) in
                try Gcrypt.hkdfSHA256(master, info: Array("secretd after-first-unlock key v1".utf8), length: Gcrypt.keyLength)
            }
        }

        private init(afterFirstUnlock: SecureBytes) {
            master = nil
            self.afterFirstUnlock = afterFirstUnlock
        }

        /// What an ordinary lock keeps: the key of the items that survive it, without the master key.
        public var withoutMaster: ItemKeys { ItemKeys(afterFirstUnlock: afterFirstUnlock) }

        /// The key that seals an item which survives a lock (`survivesLock`) or not; nil when
        /// that is the master key and it is not kept.
        func key(survivingLock survivesLock: Bool) -> SecureBytes? {
            survivesLock ? afterFirstUnlock : master
        }

        /// Whether these keys open `item`.
        public func opens(_ item: ItemRecord) -> Bool { key(survivingLock: item.survivesLock) != nil }
    }
}
