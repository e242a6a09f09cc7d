// io.github.secretd.Import1

import DBusValues
import KeychainCore
import SecretCrypto
import SecretStore

extension Introspection {
    /// secretd's own interface for importing keyrings (see secretd(1)).
    static let importingInterface = BusInterface(name: importing, objects: .service, methods: [
        Method(name: "ImportKeyring", rule: .unconfined, arguments: [
            Argument(name: "name", type: "s"), Argument(name: "properties", type: "a{sv}"),
            Argument(name: "master", type: secret), Argument(name: "items", type: "a(a{sv}\(secret))"),
        ], results: [
            Argument(name: "collection", type: "o"), Argument(name: "imported", type: "u"), Argument(name: "skipped", type: "u"),
        ], handler: .later { provider, call, reply throws(SecretServiceError) in
            let request = try ImportObject(provider).prepareImport(
                name: call.argument(0), properties: call.argument(1), master: call.argument(2), items: call.argument(3), sender: call.sender)
            ImportObject(provider).importKeyring(request, reply: reply)
        }),
        Method(name: "ImportItems", rule: .unconfined, arguments: [
            Argument(name: "collection", type: "s"), Argument(name: "replace", type: "b"),
            Argument(name: "items", type: "a(a{sv}\(secret))"),
        ], results: [
            Argument(name: "imported", type: "u"), Argument(name: "replaced", type: "u"), Argument(name: "skipped", type: "u"),
        ], handler: .later { provider, call, reply throws(SecretServiceError) in
            try ImportObject(provider).importBatch(
                collection: call.argument(0), replace: call.argument(1), items: call.argument(2), sender: call.sender, reply: reply)
        }),
        Method(name: "ReadItems", rule: .unconfined, arguments: [
            Argument(name: "items", type: "ao"), Argument(name: "session", type: "o"),
        ], results: [Argument(name: "properties", type: "a{oa{sv}}")],
        handler: .now { provider, call throws(SecretServiceError) in
            try ImportObject(provider).readItems(
                call.argument(0, as: [ObjectPath].self).map(\.path), sessionPath: call.argument(1, as: ObjectPath.self).path,
                sender: call.sender
            ).get()
        }),
    ])
}

/// secretd's import interface (`io.github.secretd.Import1`): a whole keyring from another
/// provider's files (`secretctl import gnome-keyring`), with its name, label and times and its
/// items' times, which the Secret Service's own CreateItem cannot carry, in one transaction.
struct ImportObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// One item of an import, as the call carries it.
    fileprivate struct ImportedItem {
        var label: String
        var attributes: [String: String]
        var secret: SecureBytes
        var contentType: String
        var times: Store.Times?
    }

    /// `ImportKeyring`; answers once the keyring's key is derived (off the main loop) and the
    /// items are written.
    fileprivate func importKeyring(_ request: ImportRequest, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        if let existing = request.existing {
            // A locked keyring is opened with the password given, as UnlockWithMasterPassword would.
            provider.unlock(existing, password: request.password) { [weak provider = provider] unlocked in
                guard let provider else { return }
                reply(unlocked.flatMap { ImportObject(provider).importItems(request, newKey: nil) })
            }
        } else {
            let (password, parameters) = (request.password, provider.options.kdf)
            provider.passwordChecks.derive({ Result { () throws(StoreError) in try NewCollectionKey(password: password, parameters: parameters) } }) {
                [weak provider = provider] derived in
                guard let provider else { return }
                reply(derived.flatMap { made in
                    made.mapError { SecretServiceError(storeFailure: $0) }.flatMap { ImportObject(provider).importItems(request, newKey: $0) }
                })
            }
        }
    }

    /// What an import call asks for, checked.
    fileprivate struct ImportRequest {
        var name: String
        var label: String
        var times: Store.Times?
        var items: [ImportedItem]
        var existing: Store.CollectionRecord?
        var password: SecureBytes
    }

    /// Checks an import call's arguments, from `sender`.
    fileprivate func prepareImport(
        name: String, properties: [String: DBusValue], master: DBusValue, items itemValues: [DBusValue], sender: String
    ) throws(SecretServiceError) -> ImportRequest {
        try checkImport(name: name, properties: properties, master: master, items: itemValues, sender: sender).get()
    }

    private func checkImport(
        name: String, properties: [String: DBusValue], master: DBusValue, items itemValues: [DBusValue], sender: String
    ) -> Result<ImportRequest, SecretServiceError> {
        guard ObjectPaths.isCollectionName(name), name != Provider.sessionName else {
            return .failure(.invalidArgs("“\(name)” cannot name a keyring (letters, digits and _, at most 64)"))
        }
        guard let label = properties[SecretServiceNames.Property.collectionLabel].map(\.string) ?? name else {
            return .failure(.invalidArgs("\(SecretServiceNames.Property.collectionLabel) must be a string (s)"))
        }
        let collectionTimes: Store.Times?
        switch Self.times(properties, prefix: SecretServiceNames.Interface.collection) {
        case .failure(let problem): return .failure(problem)
        case .success(let times): collectionTimes = times
        }
        var items: [ImportedItem] = []
        for value in itemValues {
            guard let fields = value.tuple, fields.count == 2, let itemProperties = fields[0].variantMap else {
                return .failure(.invalidArgs("each item must be (a{sv}(oayays))"))
            }
            guard let itemLabel = itemProperties[SecretServiceNames.Property.itemLabel].map(\.string) ?? "",
                let requested = itemProperties[SecretServiceNames.Property.itemAttributes].map(\.stringMap) ?? [:]
            else { return .failure(.invalidArgs("an item's Label must be s and its Attributes a{ss}")) }
            if let problem = Provider.checkItemText(label: itemLabel, attributes: requested) { return .failure(problem) }
            var placed: [String: String]
            if let appID = PortalObject.appKeyOwner(requested) {
                // A desktop portal app key (gnome-keyring's, oo7's): into its app's own group (only
                // unconfined clients outside a sandbox import, so the key is the person's to place).
                placed = requested
                placed[AccessGroupNames.attribute] = PortalNames.group(of: appID)
            } else {
                switch provider.placeInGroup(requested, for: sender) {
                case .failure(let refusal): return .failure(refusal)
                case .success(let attributes): placed = attributes
                }
            }
            let times: Store.Times?
            switch Self.times(itemProperties, prefix: SecretServiceNames.Interface.item) {
            case .failure(let problem): return .failure(problem)
            case .success(let found): times = found
            }
            switch provider.decodeSecret(fields[1], from: sender) {
            case .failure(let problem): return .failure(problem)
            case .success(let (secret, contentType)):
                items.append(ImportedItem(label: itemLabel, attributes: placed, secret: secret, contentType: contentType, times: times))
            }
        }
        let existing: Store.CollectionRecord?
        do { existing = try provider.keyring.collection(named: name) } catch { return .failure(provider.storeFailure(error)) }
        let password: SecureBytes
        switch provider.decodeSecret(master, from: sender) {
        case .failure(let problem): return .failure(problem)
        case .success(let (secret, _)): password = secret
        }
        if let existing {
            if provider.keyring[existing.id] == nil, password.count == 0 {
                return .failure(.isLocked("the keyring \(name) is locked; unlock it first"))
            }
        } else if password.count == 0 {
            return .failure(.invalidArgs("a new keyring needs a password"))
        }
        return .success(ImportRequest(
            name: name, label: label, times: collectionTimes, items: items, existing: existing, password: password))
    }

    /// Writes the items in one transaction (into a new collection with `newKey` when the
    /// request names none that exists), skipping each that the keyring holds already with the
    /// same attributes and secret.
    private func importItems(_ request: ImportRequest, newKey: NewCollectionKey?) -> Result<DBusValue, SecretServiceError> {
        let (items, existing, name, label, times) = (request.items, request.existing, request.name, request.label, request.times)
        do {
            var created: [Store.ItemRecord] = []
            var skipped = 0
            let (collection, _) = try provider.keyring.transaction { () throws(StoreError) -> (Store.CollectionRecord, Store.ItemKeys) in
                let (collection, key): (Store.CollectionRecord, Store.ItemKeys)
                if let existing {
                    guard let known = provider.keyring[existing.id] else { throw .locked }
                    (collection, key) = (existing, known)
                } else if let newKey {
                    (collection, key) = try provider.keyring.createCollection(name: name, label: label, key: newKey, times: times)
                } else {
                    throw .invalidInput("a new keyring needs a password")
                }
                for item in items {
                    if try holds(item, in: collection, key: key) {
                        skipped += 1
                        continue
                    }
                    let contents = ItemContents(label: item.label, attributes: item.attributes, secret: item.secret, contentType: item.contentType)
                    created.append(try provider.keyring.createItem(in: collection, keys: key, contents: contents, times: item.times))
                }
                return (collection, key)
            }
            Log.info("imported \(created.count) items into the \(collection.name) keyring (\(skipped) were there already)")
            return .success(.tuple([.objectPath(ObjectPaths.collection(collection.name)), .uint32(UInt32(created.count)), .uint32(UInt32(skipped))]))
        } catch {
            return .failure(provider.storeFailure(error))
        }
    }

    /// Whether `collection` has an item with exactly `item`'s attributes and secret.
    private func holds(_ item: ImportedItem, in collection: Store.CollectionRecord, key: Store.ItemKeys) throws(StoreError) -> Bool {
        for candidate in try provider.searchItems(item.attributes, in: collection) {
            let contents = try provider.keyring.readItem(candidate, in: collection, keys: key)
            if contents.attributes == item.attributes && contents.secret.constantTimeEquals(item.secret) { return true }
        }
        return false
    }

    /// The `Created` and `Modified` properties of an imported object (`INTERFACE.Created`,
    /// `INTERFACE.Modified`, both `t`), when it has them; both or neither.
    private static func times(_ properties: [String: DBusValue], prefix: String) -> Result<Store.Times?, SecretServiceError> {
        let created = properties["\(prefix).Created"]
        let modified = properties["\(prefix).Modified"]
        if created == nil && modified == nil { return .success(nil) }
        guard let created = created?.uint64, let modified = modified?.uint64 else {
            return .failure(.invalidArgs("\(prefix).Created and .Modified must both be given, as t"))
        }
        return .success(Store.Times(created: created, modified: modified))
    }
}
