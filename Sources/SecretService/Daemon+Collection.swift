// org.freedesktop.Secret.Collection

import KeychainCore
import SecretCrypto
import SecretStore
import DBusValues

extension Daemon {
    func handleCollection(_ call: MethodCall, _ collection: Store.CollectionRecord) -> Result<DBusValue, SecretServiceError> {
        let args = call.arguments
        switch call.method {
        case "SearchItems":
            guard let attributes = args[0].stringMap else { return .failure(.invalidArgs("a{ss} expected")) }
            do {
                let paths = visible(try searchItems(attributes, in: collection), for: call.sender)
                    .map { ObjectPaths.item(collection.name, $0.0.id) }
                return .success(.tuple([.objectPaths(paths)]))
            } catch {
                return .failure(storeFailure(error))
            }
        case "CreateItem":
            guard let properties = args[0].variantMap, let replace = args[2].boolean else {
                return .failure(.invalidArgs("(a{sv}(oayays)b) expected"))
            }
            return decodeSecret(args[1], from: call.sender).flatMap { secret, contentType in
                createItem(
                    in: collection, properties: properties, secret: secret, contentType: contentType, replace: replace,
                    sender: call.sender)
            }
        case "Delete":
            // Only unconfined clients outside a sandbox get here (its rule in Introspection).
            guard collection.name != Self.sessionName else { return .failure(.invalidArgs("the session keyring cannot be deleted")) }
            if keyring.isLocked(collection) { return .failure(.isLocked("the collection is locked")) }
            do {
                try keyring.deleteCollection(collection)
                return .success(.tuple([.objectPath(ObjectPaths.none)]))
            } catch {
                return .failure(storeFailure(error))
            }
        default:
            return .failure(.noSuchObject("no method \(call.method)"))
        }
    }

    private func createItem(
        in collection: Store.CollectionRecord, properties: [String: DBusValue], secret: SecureBytes, contentType: String,
        replace: Bool, sender: String
    ) -> Result<DBusValue, SecretServiceError> {
        // After an ordinary lock, the kept keys still create after-first-unlock items; the
        // store refuses any other class (`.locked`).
        guard let key = keyring.held(collection.id) else { return .failure(.isLocked("the collection is locked")) }
        let labelValue = properties[SecretServiceNames.Property.itemLabel]
        let attributesValue = properties[SecretServiceNames.Property.itemAttributes]
        guard let label = labelValue.map(\.string) ?? "" else {
            return .failure(.invalidArgs("\(SecretServiceNames.Property.itemLabel) must be a string (s)"))
        }
        guard let requested = attributesValue.map(\.stringMap) ?? [:] else {
            return .failure(.invalidArgs("\(SecretServiceNames.Property.itemAttributes) must be a{ss}"))
        }
        if let problem = Self.checkItemText(label: label, attributes: requested) { return .failure(problem) }
        let attributes: [String: String]
        switch placeInGroup(requested, for: sender) {
        case .success(let placed): attributes = placed
        case .failure(let refusal): return .failure(refusal)
        }
        let contents = ItemContents(label: label, attributes: attributes, secret: secret, contentType: contentType)
        do {
            if replace {
                for (candidate, access) in visible(try store.search(attributes, in: collection), for: sender)
                where access == .full {
                    let existing = try store.readItem(candidate, in: collection, keys: key)
                    guard existing.attributes == attributes else { continue }
                    _ = try keyring.updateItem(candidate, in: collection, keys: key, contents: contents, within: quota)
                    let path = ObjectPaths.item(collection.name, candidate.id)
                    return .success(.tuple([.objectPath(path), .objectPath(ObjectPaths.none)]))
                }
            }
            let creator = try? caller(sender).get().identity.description
            let item = try keyring.createItem(in: collection, keys: key, contents: contents, creator: creator, within: quota)
            let path = ObjectPaths.item(collection.name, item.id)
            return .success(.tuple([.objectPath(path), .objectPath(ObjectPaths.none)]))
        } catch {
            return .failure(storeFailure(error))
        }
    }

    /// Refuses labels and attribute sets beyond the daemon's limits.
    static func checkItemText(label: String, attributes: [String: String]) -> SecretServiceError? {
        if label.utf8.count > KeychainLimits.textSize { return .invalidArgs("the label is longer than \(KeychainLimits.textSize) bytes") }
        if attributes.count > KeychainLimits.attributeCount {
            return .invalidArgs("an item may have at most \(KeychainLimits.attributeCount) attributes")
        }
        if attributes.contains(where: { $0.key.utf8.count > KeychainLimits.textSize || $0.value.utf8.count > KeychainLimits.textSize }) {
            return .invalidArgs("attribute names and values must be at most \(KeychainLimits.textSize) bytes")
        }
        if attributes.reduce(0, { $0 + $1.key.utf8.count + $1.value.utf8.count }) > KeychainLimits.attributeBytes {
            return .invalidArgs("an item's attributes may take at most \(KeychainLimits.attributeBytes) bytes, names and values together")
        }
        return nil
    }

    func collectionProperty(
        _ name: String, _ collection: Store.CollectionRecord, for sender: String
    ) -> Result<DBusValue, SecretServiceError> {
        switch name {
        case "Items":
            do {
                let items = visible(try store.search([:], in: collection), for: sender)
                return .success(.objectPaths(items.map { ObjectPaths.item(collection.name, $0.0.id) }))
            } catch {
                return .failure(storeFailure(error))
            }
        case "Label": return .success(.string(collection.label))
        case "Locked": return .success(.boolean(keyring.isLocked(collection)))
        case "Created": return .success(.uint64(collection.created))
        case "Modified": return .success(.uint64(collection.modified))
        default: return .failure(.invalidArgs("no property \(name)"))
        }
    }

    func setCollectionProperty(_ name: String, _ value: DBusValue, _ collection: Store.CollectionRecord) -> SecretServiceError? {
        guard name == "Label", let label = value.string else { return .invalidArgs("only Label can be set") }
        guard label.utf8.count <= KeychainLimits.textSize else { return .invalidArgs("the label is too long") }
        do {
            try keyring.setLabel(label, of: collection)
            return nil
        } catch {
            return storeFailure(error)
        }
    }
}
