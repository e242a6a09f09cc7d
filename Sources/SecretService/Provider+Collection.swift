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
        Property(name: "Items", type: "ao", read: { daemon, read throws(SecretServiceError) in
            .objectPaths(try daemon.visibleItemPaths(of: read.collection(), for: read.sender))
        }),
        Property(name: "Label", type: "s", read: { _, read throws(SecretServiceError) in .string(try read.collection().label) },
                 setter: .init(rule: .unconfined) { daemon, write throws(SecretServiceError) in
                     try daemon.setLabel(write.value(), of: write.collection())
                 }),
        Property(name: "Locked", type: "b", read: { daemon, read throws(SecretServiceError) in
            .boolean(daemon.keyring.isLocked(try read.collection()))
        }),
        Property(name: "Created", type: "t", read: { _, read throws(SecretServiceError) in .uint64(try read.collection().created) }),
        Property(name: "Modified", type: "t", read: { _, read throws(SecretServiceError) in .uint64(try read.collection().modified) }),
    ], signals: [
        Signal(name: "ItemCreated", arguments: [Argument(name: "item", type: "o")]),
        Signal(name: "ItemDeleted", arguments: [Argument(name: "item", type: "o")]),
        Signal(name: "ItemChanged", arguments: [Argument(name: "item", type: "o")]),
    ])
}

extension Provider {
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

    /// The paths of `collection`'s items that `sender` may see: its `Items`.
    func visibleItemPaths(of collection: Store.CollectionRecord, for sender: String) throws(SecretServiceError) -> [String] {
        do throws(StoreError) {
            return visible(try store.search([:], in: collection), for: sender).map { ObjectPaths.item(collection.name, $0.0.id) }
        } catch {
            throw storeFailure(error)
        }
    }

    /// Writes `Label` (only unconfined clients outside a sandbox get here: its rule).
    fileprivate func setLabel(_ label: String, of collection: Store.CollectionRecord) throws(SecretServiceError) {
        guard label.utf8.count <= KeychainLimits.textSize else { throw .invalidArgs("the label is too long") }
        do throws(StoreError) {
            try keyring.setLabel(label, of: collection)
        } catch {
            throw storeFailure(error)
        }
    }
}
