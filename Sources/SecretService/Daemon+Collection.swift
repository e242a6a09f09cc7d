// org.freedesktop.Secret.Collection

import KeychainCore
import SecretCrypto
import SecretStore
import DBusValues

extension Introspection {
    /// org.freedesktop.Secret.Collection, at a collection's path and at its aliases'.
    static let collectionInterface = BusInterface(name: collection, objects: .collection, methods: [
        Method(name: "Delete", rule: .unconfined, results: [Argument(name: "prompt", type: "o")],
               handler: .now { daemon, call throws(SecretServiceError) in try daemon.deleteCollection(call.collection()) }),
        Method(name: "SearchItems", rule: .anyClient, arguments: [Argument(name: "attributes", type: "a{ss}")], results: [Argument(name: "results", type: "ao")],
               handler: .now { daemon, call throws(SecretServiceError) in
                   try daemon.searchItems(call.argument(0), in: call.collection(), for: call.sender)
               }),
        Method(name: "CreateItem", rule: .anyClient, arguments: [
            Argument(name: "properties", type: "a{sv}"), Argument(name: "secret", type: secret), Argument(name: "replace", type: "b"),
        ], results: [Argument(name: "item", type: "o"), Argument(name: "prompt", type: "o")],
               handler: .now { daemon, call throws(SecretServiceError) in
                   let (secret, contentType) = try daemon.decodeSecret(call.argument(1), from: call.sender).get()
                   return try daemon.createItem(
                       in: call.collection(), properties: call.argument(0), secret: secret, contentType: contentType,
                       replace: call.argument(2), sender: call.sender
                   ).get()
               }),
    ], properties: [
        Property(name: "Items", type: "ao"),
        Property(name: "Label", type: "s", writableBy: .unconfined),
        Property(name: "Locked", type: "b"),
        Property(name: "Created", type: "t"),
        Property(name: "Modified", type: "t"),
    ], signals: [
        Signal(name: "ItemCreated", arguments: [Argument(name: "item", type: "o")]),
        Signal(name: "ItemDeleted", arguments: [Argument(name: "item", type: "o")]),
        Signal(name: "ItemChanged", arguments: [Argument(name: "item", type: "o")]),
    ])
}

extension Daemon {
    /// `SearchItems`: the items of `collection` with `attributes` that `sender` may see.
    fileprivate func searchItems(
        _ attributes: [String: String], in collection: Store.CollectionRecord, for sender: String
    ) throws(SecretServiceError) -> DBusValue {
        do throws(StoreError) {
            let paths = visible(try searchItems(attributes, in: collection), for: sender).map { ObjectPaths.item(collection.name, $0.0.id) }
            return .tuple([.objectPaths(paths)])
        } catch {
            throw storeFailure(error)
        }
    }

    /// `Delete`: the collection and its items (only unconfined clients outside a sandbox get
    /// here: its rule).
    fileprivate func deleteCollection(_ collection: Store.CollectionRecord) throws(SecretServiceError) -> DBusValue {
        guard collection.name != Self.sessionName else { throw .invalidArgs("the session keyring cannot be deleted") }
        if keyring.isLocked(collection) { throw .isLocked("the collection is locked") }
        do throws(StoreError) {
            try keyring.deleteCollection(collection)
            return .tuple([.objectPath(ObjectPaths.none)])
        } catch {
            throw storeFailure(error)
        }
    }

    fileprivate func createItem(
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
