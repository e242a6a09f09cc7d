// org.freedesktop.Secret.Item

import KeychainCore
import SecretCrypto
import SecretStore
import DBusValues

extension Introspection {
    /// org.freedesktop.Secret.Item, for a client whose access groups hold the item.
    static let itemInterface = BusInterface(name: item, objects: .item, methods: [
        Method(name: "Delete", rule: .itemGroup, results: [Argument(name: "Prompt", type: "o")],
               handler: .now { provider, call throws(SecretServiceError) in try ItemObject(provider).deleteItem(call.item()) }),
        Method(name: "GetSecret", rule: .itemGroup, arguments: [Argument(name: "session", type: "o")], results: [Argument(name: "secret", type: secret)],
               handler: .now { provider, call throws(SecretServiceError) in
                   try ItemObject(provider).getSecret(call.item(), sessionPath: call.argument(0, as: ObjectPath.self).path, sender: call.sender)
               }),
        Method(name: "SetSecret", rule: .itemGroup, arguments: [Argument(name: "secret", type: secret)],
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   let (item, collection) = try call.item()
                   let secret = try provider.sentSecret(call.argument(0), from: call.sender).get()
                   try ItemObject(provider).setSecret(secret, of: item, in: collection, reply: reply)
               }),
    ], properties: [
        Property(name: "Locked", type: "b", read: { provider, read throws(SecretServiceError) in
            .boolean(try ItemObject(provider).readerKeys(read) == nil)
        }),
        Property(name: "Attributes", type: "a{ss}", read: { provider, read throws(SecretServiceError) in
            .stringMap(try ItemObject(provider).description(read)?.attributes ?? [:])
        }, setter: .init(rule: .itemGroup) { provider, write throws(SecretServiceError) in
            let (item, collection) = try write.item()
            try ItemObject(provider).setAttributes(write.value(), of: item, in: collection, sender: write.sender)
        }),
        Property(name: "Label", type: "s", read: { provider, read throws(SecretServiceError) in
            .string(try ItemObject(provider).description(read)?.label ?? "")
        }, setter: .init(rule: .itemGroup) { provider, write throws(SecretServiceError) in
            let (item, collection) = try write.item()
            let label = try write.value(as: String.self)
            _ = try ItemObject(provider).update(item, collection, ItemObject(provider).keys(opening: item)) { contents in
                contents.label = label
                return nil
            }.get()
        }),
        Property(name: "Type", type: "s", read: { provider, read throws(SecretServiceError) in
            .string(try ItemObject(provider).description(read)?.attributes["xdg:schema"] ?? "")
        }),
        Property(name: "Created", type: "t", read: { _, read throws(SecretServiceError) in .uint64(try read.item().0.created) }),
        Property(name: "Modified", type: "t", read: { _, read throws(SecretServiceError) in .uint64(try read.item().0.modified) }),
    ])
}

/// An item (org.freedesktop.Secret.Item): its secret read and written through the caller's
/// session, its label and attributes, deletion; for a client whose access groups hold it.
struct ItemObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// The keys that open `item`: an after-first-unlock item opens with the key kept after an
    /// ordinary lock.
    fileprivate func keys(opening item: Store.ItemRecord) throws(SecretServiceError) -> Store.ItemKeys {
        guard let itemKeys = provider.keyring.opening(item) else { throw .isLocked("the item's collection is locked") }
        return itemKeys
    }

    /// `GetSecret`: the secret, encoded for the caller's session at `sessionPath`.
    fileprivate func getSecret(
        _ target: (Store.ItemRecord, Store.CollectionRecord), sessionPath: String, sender: String
    ) throws(SecretServiceError) -> DBusValue {
        let (item, collection) = target
        let itemKeys = try keys(opening: item)
        let session = try provider.session(at: sessionPath, for: sender).get()
        let contents: ItemContents
        do throws(StoreError) {
            contents = try provider.keyring.readSecret(item, in: collection, keys: itemKeys, route: "Item.GetSecret")
        } catch {
            throw provider.storeFailure(error)
        }
        return .tuple([try session.encode(contents, sessionPath: sessionPath).get()])
    }

    /// `Delete`: the item is gone (no prompt).
    fileprivate func deleteItem(_ target: (Store.ItemRecord, Store.CollectionRecord)) throws(SecretServiceError) -> DBusValue {
        let (item, collection) = target
        let itemKeys = try keys(opening: item)
        do throws(StoreError) {
            try provider.keyring.deleteItem(item, in: collection, keys: itemKeys)
            return .tuple([.objectPath(ObjectPaths.none)])
        } catch {
            throw provider.storeFailure(error)
        }
    }

    /// Reads, changes and re-seals an item (the keyring publishes the change).
    /// `SetSecret`: answers through `reply` at once or, when the item is large before or after
    /// (``SealingQueue/threshold``), once its update has been sealed and written off the loop
    /// (``LargeItemUpdate``). What fails at once is thrown.
    fileprivate func setSecret(
        _ secret: SentSecret, of item: Store.ItemRecord, in collection: Store.CollectionRecord,
        reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) throws(SecretServiceError) {
        let itemKeys = try keys(opening: item)
        let change: @Sendable (inout ItemContents) -> SecretServiceError? = { secret.replaceSecret(in: &$0) }
        // With the keys as they are then (the keyring may have been locked and unlocked).
        let onLoop = { [provider] () -> Result<DBusValue, SecretServiceError> in
            let object = ItemObject(provider)
            return Result { () throws(SecretServiceError) in try object.keys(opening: item) }
                .flatMap { object.update(item, collection, $0, change) }.map { _ in .tuple([]) }
        }
        let stored: Int
        do throws(StoreError) {
            stored = try provider.keyring.store.sealedByteCount(of: item)
        } catch {
            throw provider.storeFailure(error)
        }
        guard max(secret.byteCount, stored) >= SealingQueue.threshold else { return reply(onLoop()) }
        LargeItemUpdate(provider: provider).update(
            item, in: collection, keys: itemKeys, change: change, answer: { _ in .tuple([]) }, onLoop: onLoop, reply: reply)
    }

    /// Gives `item` the contents `change` makes of its current ones (or says why not), on the
    /// loop; the updated item, or why there is none.
    fileprivate func update(
        _ item: Store.ItemRecord, _ collection: Store.CollectionRecord, _ itemKeys: Store.ItemKeys,
        _ change: (inout ItemContents) -> SecretServiceError?
    ) -> Result<Store.ItemRecord, SecretServiceError> {
        do {
            var contents = try provider.keyring.readItem(item, in: collection, keys: itemKeys)
            if let refusal = change(&contents) { return .failure(refusal) }
            if let problem = Provider.checkItemText(label: contents.label, attributes: contents.attributes) {
                return .failure(problem)
            }
            return .success(try provider.keyring.updateItem(item, in: collection, keys: itemKeys, contents: contents, within: provider.quota))
        } catch {
            return .failure(provider.storeFailure(error))
        }
    }

    /// The keys that open the item read, when the reader may open it: an item of an `ask`
    /// group the reader is not allowed into shows as locked; an after-first-unlock item stays
    /// unlocked after an ordinary lock of its collection.
    fileprivate func readerKeys(_ read: PropertyRead) throws(SecretServiceError) -> Store.ItemKeys? {
        let (item, _, access) = try read.item()
        return access == .full ? provider.keyring.opening(item) : nil
    }

    /// The label and attributes of the item read; nil when it shows as locked (they are sealed).
    /// The last one read is kept while the store does not change (``recentItem``).
    fileprivate func description(_ read: PropertyRead) throws(SecretServiceError) -> Provider.ItemDescription? {
        let (item, collection, _) = try read.item()
        guard let itemKeys = try readerKeys(read) else { return nil }
        if let recent = provider.recentItem, recent.itemID == item.id, recent.changeCount == provider.keyring.changeCount { return recent }
        do throws(StoreError) {
            let contents = try provider.keyring.readItem(item, in: collection, keys: itemKeys)
            let described = Provider.ItemDescription(
                itemID: item.id, changeCount: provider.keyring.changeCount, label: contents.label, attributes: contents.attributes)
            provider.recentItem = described
            return described
        } catch {
            throw provider.storeFailure(error)
        }
    }

    /// Writes `Attributes`. Moving an item is creating it in its new group: the writer must
    /// belong there. Attributes without a group keep the item where it is, and attributes that
    /// name no accessibility class keep the item's.
    fileprivate func setAttributes(
        _ requested: [String: String], of item: Store.ItemRecord, in collection: Store.CollectionRecord, sender: String
    ) throws(SecretServiceError) {
        let itemKeys = try keys(opening: item)
        var placed = try provider.placeInGroup(requested, for: sender, unnamed: item.accessGroup ?? AccessGroupNames.defaultGroup).get()
        _ = try update(item, collection, itemKeys) { contents in
            if requested[ItemAccessibility.attribute] == nil, let kept = contents.attributes[ItemAccessibility.attribute] {
                placed[ItemAccessibility.attribute] = kept
            }
            contents.attributes = placed
            return nil
        }.get()
    }
}

