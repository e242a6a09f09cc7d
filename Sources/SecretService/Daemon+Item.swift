// org.freedesktop.Secret.Item

import KeychainCore
import SecretCrypto
import SecretStore
import DBusValues

extension Introspection {
    /// org.freedesktop.Secret.Item, for a client whose access groups hold the item.
    static let itemInterface = BusInterface(name: item, objects: .item, methods: [
        Method(name: "Delete", rule: .itemGroup, results: [Argument(name: "Prompt", type: "o")],
               handler: .now { daemon, call throws(SecretServiceError) in try daemon.deleteItem(call.item()) }),
        Method(name: "GetSecret", rule: .itemGroup, arguments: [Argument(name: "session", type: "o")], results: [Argument(name: "secret", type: secret)],
               handler: .now { daemon, call throws(SecretServiceError) in
                   try daemon.getSecret(call.item(), sessionPath: call.argument(0, as: ObjectPath.self).path, sender: call.sender)
               }),
        Method(name: "SetSecret", rule: .itemGroup, arguments: [Argument(name: "secret", type: secret)],
               handler: .now { daemon, call throws(SecretServiceError) in
                   let (item, collection) = try call.item()
                   let itemKeys = try daemon.keys(opening: item)
                   let (secret, contentType) = try daemon.decodeSecret(call.argument(0), from: call.sender).get()
                   try daemon.update(item, collection, itemKeys) { $0.secret = secret; $0.contentType = contentType }.get()
                   return .tuple([])
               }),
    ], properties: [
        Property(name: "Locked", type: "b"),
        Property(name: "Attributes", type: "a{ss}", writableBy: .itemGroup),
        Property(name: "Label", type: "s", writableBy: .itemGroup),
        Property(name: "Type", type: "s"),
        Property(name: "Created", type: "t"),
        Property(name: "Modified", type: "t"),
    ])
}

extension Daemon {
    /// The keys that open `item`: an after-first-unlock item opens with the key kept after an
    /// ordinary lock.
    fileprivate func keys(opening item: Store.ItemRecord) throws(SecretServiceError) -> Store.ItemKeys {
        guard let itemKeys = keyring.opening(item) else { throw .isLocked("the item's collection is locked") }
        return itemKeys
    }

    /// `GetSecret`: the secret, encoded for the caller's session at `sessionPath`.
    fileprivate func getSecret(
        _ target: (Store.ItemRecord, Store.CollectionRecord), sessionPath: String, sender: String
    ) throws(SecretServiceError) -> DBusValue {
        let (item, collection) = target
        let itemKeys = try keys(opening: item)
        let session = try session(at: sessionPath, for: sender).get()
        let contents: ItemContents
        do throws(StoreError) {
            contents = try store.readItem(item, in: collection, keys: itemKeys)
        } catch {
            throw storeFailure(error)
        }
        return .tuple([try session.encode(contents, sessionPath: sessionPath).get()])
    }

    /// `Delete`: the item is gone (no prompt).
    fileprivate func deleteItem(_ target: (Store.ItemRecord, Store.CollectionRecord)) throws(SecretServiceError) -> DBusValue {
        let (item, collection) = target
        let itemKeys = try keys(opening: item)
        do throws(StoreError) {
            try keyring.deleteItem(item, in: collection, keys: itemKeys)
            return .tuple([.objectPath(ObjectPaths.none)])
        } catch {
            throw storeFailure(error)
        }
    }

    /// Reads, changes and re-seals an item (the keyring publishes the change).
    fileprivate func update(
        _ item: Store.ItemRecord, _ collection: Store.CollectionRecord, _ itemKeys: Store.ItemKeys,
        _ change: (inout ItemContents) -> Void
    ) -> Result<Void, SecretServiceError> {
        do {
            var contents = try store.readItem(item, in: collection, keys: itemKeys)
            change(&contents)
            if let problem = Self.checkItemText(label: contents.label, attributes: contents.attributes) {
                return .failure(problem)
            }
            _ = try keyring.updateItem(item, in: collection, keys: itemKeys, contents: contents, within: quota)
            return .success(())
        } catch {
            return .failure(storeFailure(error))
        }
    }

    func itemProperty(
        _ name: String, _ item: Store.ItemRecord, _ collection: Store.CollectionRecord, access: ItemAccess
    ) -> Result<DBusValue, SecretServiceError> {
        // An item of an `ask` group the caller is not allowed into shows as locked; an
        // after-first-unlock item stays unlocked after an ordinary lock of its collection.
        let itemKeys = access == .full ? keyring.opening(item) : nil
        switch name {
        case "Locked": return .success(.boolean(itemKeys == nil))
        case "Created": return .success(.uint64(item.created))
        case "Modified": return .success(.uint64(item.modified))
        case "Label", "Attributes", "Type":
            // Labels and attributes are sealed: a locked item shows none.
            guard let itemKeys else {
                return .success(name == "Attributes" ? .stringMap([:]) : .string(""))
            }
            let described: ItemDescription
            if let recent = recentItem, recent.itemID == item.id, recent.changeCount == store.changeCount {
                described = recent
            } else {
                do {
                    let contents = try store.readItem(item, in: collection, keys: itemKeys)
                    described = ItemDescription(
                        itemID: item.id, changeCount: store.changeCount, label: contents.label, attributes: contents.attributes)
                } catch {
                    return .failure(storeFailure(error))
                }
                recentItem = described
            }
            switch name {
            case "Label": return .success(.string(described.label))
            case "Attributes": return .success(.stringMap(described.attributes))
            default: return .success(.string(described.attributes["xdg:schema"] ?? ""))
            }
        default:
            return .failure(.invalidArgs("no property \(name)"))
        }
    }

    func setItemProperty(
        _ name: String, _ value: DBusValue, _ item: Store.ItemRecord, _ collection: Store.CollectionRecord, sender: String
    ) -> SecretServiceError? {
        guard let itemKeys = keyring.opening(item) else { return .isLocked("the item's collection is locked") }
        let result: Result<Void, SecretServiceError>
        switch name {
        case "Label":
            guard let label = value.string else { return .invalidArgs("Label is a string") }
            result = update(item, collection, itemKeys) { $0.label = label }
        case "Attributes":
            guard let requested = value.stringMap else { return .invalidArgs("Attributes is a{ss}") }
            // Moving an item is creating it in its new group: the caller must belong there.
            // Attributes without a group keep the item where it is.
            switch placeInGroup(requested, for: sender, unnamed: item.accessGroup ?? AccessGroupNames.defaultGroup) {
            case .success(var placed):
                result = update(item, collection, itemKeys) { contents in
                    // Attributes that name no accessibility class keep the item's.
                    if requested[ItemAccessibility.attribute] == nil, let kept = contents.attributes[ItemAccessibility.attribute] {
                        placed[ItemAccessibility.attribute] = kept
                    }
                    contents.attributes = placed
                }
            case .failure(let refusal): return refusal
            }
        default:
            return .invalidArgs("\(name) cannot be set")
        }
        if case .failure(let error) = result { return error }
        return nil
    }
}
