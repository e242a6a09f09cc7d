// org.freedesktop.Secret.Item

import KeychainCore
import SecretCrypto
import SecretStore
import DBusValues

extension Daemon {
    func handleItem(
        _ call: MethodCall, _ item: Store.ItemRecord, _ collection: Store.CollectionRecord
    ) -> Result<DBusValue, SecretServiceError> {
        // An after-first-unlock item opens with the key kept after an ordinary lock.
        guard let itemKeys = keyring.opening(item) else { return .failure(.isLocked("the item's collection is locked")) }
        switch call.method {
        case "GetSecret":
            guard let sessionPath = call.arguments[0].objectPath else { return .failure(.invalidArgs("o expected")) }
            return session(at: sessionPath, for: call.sender).flatMap { session in
                do {
                    let contents = try store.readItem(item, in: collection, keys: itemKeys)
                    return session.encode(contents, sessionPath: sessionPath)
                        .map { .tuple([$0]) }
                } catch {
                    return .failure(storeFailure(error))
                }
            }
        case "SetSecret":
            return decodeSecret(call.arguments[0], from: call.sender).flatMap { secret, contentType in
                update(item, collection, itemKeys) { $0.secret = secret; $0.contentType = contentType }.map { .tuple([]) }
            }
        case "Delete":
            do {
                try keyring.deleteItem(item, in: collection, keys: itemKeys)
                return .success(.tuple([.objectPath(ObjectPaths.none)]))
            } catch {
                return .failure(storeFailure(error))
            }
        default:
            return .failure(.noSuchObject("no method \(call.method)"))
        }
    }

    /// Reads, changes and re-seals an item (the keyring publishes the change).
    private func update(
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
