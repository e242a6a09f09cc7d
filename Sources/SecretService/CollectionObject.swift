// org.freedesktop.Secret.Collection

import KeychainCore
import SecretCrypto
import SecretStore
import DBusValues

extension Introspection {
    /// org.freedesktop.Secret.Collection, at a collection's path and at its aliases'.
    static let collectionInterface = BusInterface(name: collection, objects: .collection, methods: [
        Method(name: "Delete", rule: .unconfined, results: [Argument(name: "prompt", type: "o")],
               handler: .now { provider, call throws(SecretServiceError) in try CollectionObject(provider).deleteCollection(call.collection()) }),
        Method(name: "SearchItems", rule: .anyClient, arguments: [Argument(name: "attributes", type: "a{ss}")], results: [Argument(name: "results", type: "ao")],
               handler: .now { provider, call throws(SecretServiceError) in
                   try CollectionObject(provider).searchItems(call.argument(0), in: call.collection(), for: call.sender)
               }),
        Method(name: "CreateItem", rule: .anyClient, arguments: [
            Argument(name: "properties", type: "a{sv}"), Argument(name: "secret", type: secret), Argument(name: "replace", type: "b"),
        ], results: [Argument(name: "item", type: "o"), Argument(name: "prompt", type: "o")],
               handler: .now { provider, call throws(SecretServiceError) in
                   let (secret, contentType) = try provider.decodeSecret(call.argument(1), from: call.sender).get()
                   return try CollectionObject(provider).createItem(
                       in: call.collection(), properties: call.argument(0), secret: secret, contentType: contentType,
                       replace: call.argument(2), sender: call.sender
                   ).get()
               }),
    ], properties: [
        Property(name: "Items", type: "ao", read: { provider, read throws(SecretServiceError) in
            .objectPaths(try provider.visibleItemPaths(of: read.collection(), for: read.sender))
        }),
        Property(name: "Label", type: "s", read: { _, read throws(SecretServiceError) in .string(try read.collection().label) },
                 setter: .init(rule: .unconfined) { provider, write throws(SecretServiceError) in
                     try CollectionObject(provider).setLabel(write.value(), of: write.collection())
                 }),
        Property(name: "Locked", type: "b", read: { provider, read throws(SecretServiceError) in
            .boolean(provider.keyring.isLocked(try read.collection()))
        }),
        Property(name: "Created", type: "t", read: { _, read throws(SecretServiceError) in .uint64(try read.collection().created) }),
        Property(name: "Modified", type: "t", read: { _, read throws(SecretServiceError) in .uint64(try read.collection().modified) }),
    ], signals: [
        Signal(name: "ItemCreated", arguments: [Argument(name: "item", type: "o")]),
        Signal(name: "ItemDeleted", arguments: [Argument(name: "item", type: "o")]),
        Signal(name: "ItemChanged", arguments: [Argument(name: "item", type: "o")]),
    ])
}

/// A collection, at its path or an alias's (org.freedesktop.Secret.Collection): items searched
/// and created, the label, deletion.
struct CollectionObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// `SearchItems`: the items of `collection` with `attributes` that `sender` may see.
    fileprivate func searchItems(
        _ attributes: [String: String], in collection: Store.CollectionRecord, for sender: String
    ) throws(SecretServiceError) -> DBusValue {
        do throws(StoreError) {
            let paths = provider.visible(try provider.searchItems(attributes, in: collection), for: sender).map { ObjectPaths.item(collection.name, $0.0.id) }
            return .tuple([.objectPaths(paths)])
        } catch {
            throw provider.storeFailure(error)
        }
    }

    /// `Delete`: the collection and its items (only unconfined clients outside a sandbox get
    /// here: its rule).
    fileprivate func deleteCollection(_ collection: Store.CollectionRecord) throws(SecretServiceError) -> DBusValue {
        guard collection.name != Provider.sessionName else { throw .invalidArgs("the session keyring cannot be deleted") }
        if provider.keyring.isLocked(collection) { throw .isLocked("the collection is locked") }
        do throws(StoreError) {
            try provider.keyring.deleteCollection(collection)
            return .tuple([.objectPath(ObjectPaths.none)])
        } catch {
            throw provider.storeFailure(error)
        }
    }

    fileprivate func createItem(
        in collection: Store.CollectionRecord, properties: [String: DBusValue], secret: SecureBytes, contentType: String,
        replace: Bool, sender: String
    ) -> Result<DBusValue, SecretServiceError> {
        // After an ordinary lock, the kept keys still create after-first-unlock items; the
        // store refuses any other class (`.locked`).
        guard let key = provider.keyring.held(collection.id) else { return .failure(.isLocked("the collection is locked")) }
        let labelValue = properties[SecretServiceNames.Property.itemLabel]
        let attributesValue = properties[SecretServiceNames.Property.itemAttributes]
        guard let label = labelValue.map(\.string) ?? "" else {
            return .failure(.invalidArgs("\(SecretServiceNames.Property.itemLabel) must be a string (s)"))
        }
        guard let requested = attributesValue.map(\.stringMap) ?? [:] else {
            return .failure(.invalidArgs("\(SecretServiceNames.Property.itemAttributes) must be a{ss}"))
        }
        if let problem = Provider.checkItemText(label: label, attributes: requested) { return .failure(problem) }
        let attributes: [String: String]
        switch provider.placeInGroup(requested, for: sender) {
        case .success(let placed): attributes = placed
        case .failure(let refusal): return .failure(refusal)
        }
        let contents = ItemContents(label: label, attributes: attributes, secret: secret, contentType: contentType)
        do {
            if replace {
                for (candidate, access) in provider.visible(try provider.keyring.search(attributes, in: collection), for: sender)
                where access == .full {
                    let existing = try provider.keyring.readItem(candidate, in: collection, keys: key)
                    guard existing.attributes == attributes else { continue }
                    _ = try provider.keyring.updateItem(candidate, in: collection, keys: key, contents: contents, within: provider.quota)
                    let path = ObjectPaths.item(collection.name, candidate.id)
                    return .success(.tuple([.objectPath(path), .objectPath(ObjectPaths.none)]))
                }
            }
            let creator = try? provider.caller(sender).get().identity.description
            let item = try provider.keyring.createItem(in: collection, keys: key, contents: contents, creator: creator, within: provider.quota)
            let path = ObjectPaths.item(collection.name, item.id)
            return .success(.tuple([.objectPath(path), .objectPath(ObjectPaths.none)]))
        } catch {
            return .failure(provider.storeFailure(error))
        }
    }

    /// Writes `Label` (only unconfined clients outside a sandbox get here: its rule).
    fileprivate func setLabel(_ label: String, of collection: Store.CollectionRecord) throws(SecretServiceError) {
        guard label.utf8.count <= KeychainLimits.textSize else { throw .invalidArgs("the label is too long") }
        do throws(StoreError) {
            try provider.keyring.setLabel(label, of: collection)
        } catch {
            throw provider.storeFailure(error)
        }
    }
}
