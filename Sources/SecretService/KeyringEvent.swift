import SecretStore

/// One change to the keyrings, published by ``Keyring`` once it is made (in the pending
/// transaction; the transport sends nothing about it before its commit). Signals, sync and the
/// items schedule subscribe to these instead of each handler telling them. Each is done for the
/// keyring's current ``Keyring/accessor``; the audit trail records them all.
enum KeyringEvent {
    /// `item` was created in `collection`, with `label` and `attributes`.
    case itemCreated(Store.ItemRecord, in: Store.CollectionRecord, label: String, attributes: [String: String])
    /// The item `before` became `after`, with `label` and `attributes` (its new ones).
    case itemChanged(before: Store.ItemRecord, after: Store.ItemRecord, label: String, attributes: [String: String],
                     in: Store.CollectionRecord)
    /// `item` was deleted from `collection`; `label` and `attributes` were its own (nil when
    /// its sealed contents did not open).
    case itemDeleted(Store.ItemRecord, in: Store.CollectionRecord, label: String?, attributes: [String: String]?)
    /// A collection was created, unlocked (nobody saw it locked: no ``unlocked(_:)`` follows).
    case collectionCreated(Store.CollectionRecord)
    /// A collection was relabelled to `label`.
    case collectionRelabelled(Store.CollectionRecord, label: String)
    /// A collection and its items were deleted; its keys are forgotten.
    case collectionDeleted(Store.CollectionRecord)
    /// A collection was unlocked (it was locked).
    case unlocked(Store.CollectionRecord)
    /// A collection was locked (it was unlocked).
    case locked(Store.CollectionRecord)
    /// `item`'s secret was handed to the ``Keyring/accessor`` through `route` (`Item.GetSecret`,
    /// `ssh-agent sign`); `label` and `attributes` are its own. Nothing in the store changed.
    case secretRead(Store.ItemRecord, in: Store.CollectionRecord, label: String, attributes: [String: String], route: String)
    /// Something the ``Keyring/accessor`` asked for was refused. Nothing changed.
    case refused(AccessRefusal)
    /// The whole store was replaced by a backup (``Keyring/restore(from:keepingCurrentAt:keys:)``):
    /// every key is forgotten, the collections that were unlocked were published `.locked` and
    /// those gone `.collectionDeleted` before this. `appeared` are the collections new to the
    /// clients, locked; the items of every collection may have changed, and so may sync's state.
    case restored(appeared: [Store.CollectionRecord])
}
