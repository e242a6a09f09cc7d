import SecretStore

/// A request the keyring's accessor was refused (``KeyringEvent/refused(_:)``): what it asked
/// for, why it was refused, and the item or keyring it named, when there was one.
struct AccessRefusal {
    /// The method or route (`Item.GetSecret`, `Service.Unlock`, `login socket UNLOCK`).
    var route: String
    /// Why (the error the caller got).
    var reason: String
    /// The item it named.
    var item: Store.ItemRecord?
    /// The keyring it named (the item's, when it named one).
    var collection: Store.CollectionRecord?
}
