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
            try ImportObject(provider).importKeyring(
                name: call.argument(0), properties: call.argument(1), master: call.argument(2), items: call.argument(3), sender: call.sender,
                reply: reply)
        }),
        Method(name: "ImportItems", rule: .unconfined, arguments: [
            Argument(name: "collection", type: "s"), Argument(name: "replace", type: "b"),
            Argument(name: "items", type: "a(a{sv}\(secret))"),
        ], results: [
            Argument(name: "imported", type: "u"), Argument(name: "replaced", type: "u"), Argument(name: "skipped", type: "u"),
        ], handler: .later { provider, call, reply throws(SecretServiceError) in
            try ImportObject(provider).importBatch(
                collection: call.argument(0), replace: call.argument(1), items: call.argument(2), sender: call.sender,
                planned: call.letSameMethodGoAhead, reply: reply)
        }),
        Method(name: "ImportPackedItems", rule: .unconfined, arguments: [
            Argument(name: "collection", type: "s"), Argument(name: "replace", type: "b"), Argument(name: "items", type: "ay"),
        ], results: [
            Argument(name: "imported", type: "u"), Argument(name: "replaced", type: "u"), Argument(name: "skipped", type: "u"),
        ], handler: .later { provider, call, reply throws(SecretServiceError) in
            guard let packed = try call.argument(2, as: DBusValue.self).bytes else { throw .invalidArgs("argument 3 of ImportPackedItems must be ay") }
            try ImportObject(provider).importPackedBatch(
                collection: call.argument(0), replace: call.argument(1), packed: packed, sender: call.sender,
                planned: call.letSameMethodGoAhead, reply: reply)
        }),
        Method(name: "ReadPackedItems", rule: .unconfined, arguments: [
            Argument(name: "items", type: "ao"), Argument(name: "session", type: "o"),
        ], results: [Argument(name: "items", type: "ay")],
        handler: .now { provider, call throws(SecretServiceError) in
            try ImportObject(provider).readPackedItems(
                call.argument(0, as: [ObjectPath].self).map(\.path), sessionPath: call.argument(1, as: ObjectPath.self).path,
                sender: call.sender
            ).get()
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
/// items' times, which the Secret Service's own CreateItem cannot carry, its items in one
/// transaction (a large import's off the main loop: ``KeyringImportWrite``).
struct ImportObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// One item of an import, as the call carries it.
    struct ImportedItem: Sendable {
        var label: String
        var attributes: [String: String]
        var secret: SecureBytes
        var contentType: String
        var times: Store.Times?
    }

    /// `ImportKeyring`: checks the call (its items ``ItemBatchWrite/itemsPerTurn`` a turn of the
    /// loop, other clients' calls served between turns; one bad item refuses it), derives the
    /// keyring's key off the main loop, and writes the items (``importItems(_:newKey:)``);
    /// `reply` runs on the loop with the reply.
    fileprivate func importKeyring(
        name: String, properties: [String: DBusValue], master: DBusValue, items itemValues: [DBusValue], sender: String,
        reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) throws(SecretServiceError) {
        _ = try checkImport(name: name, properties: properties, master: master, sender: sender).get()
        let accessor = provider.keyring.accessor
        var items: [ImportedItem] = []
        items.reserveCapacity(itemValues.count)
        provider.offLoop.inTurns(itemValues.count, of: ItemBatchWrite.itemsPerTurn, { slice in
            provider.keyring.acting(as: accessor) { () -> Bool in
                do throws(SecretServiceError) {
                    for index in slice { items.append(try importedItem(itemValues[index], sender: sender)) }
                    return true
                } catch {
                    reply(.failure(error))
                    return false
                }
            }
        }, then: {
            provider.keyring.acting(as: accessor) {
                // Checked again: the keyring may have been created, deleted or locked between turns.
                switch checkImport(name: name, properties: properties, master: master, sender: sender) {
                case .failure(let problem): reply(.failure(problem))
                case .success(var request):
                    request.items = items
                    importKeyring(request, reply: reply)
                }
            }
        })
    }

    /// Unlocks the keyring `request` names with its password, or derives a new keyring's key,
    /// then writes the items.
    private func importKeyring(_ request: ImportRequest, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        if let existing = request.existing {
            // A locked keyring is opened with the password given, as UnlockWithMasterPassword would.
            provider.unlock(existing, password: request.password) { [weak provider = provider] unlocked in
                guard let provider else { return }
                switch unlocked {
                case .failure(let problem): reply(.failure(problem))
                case .success: ImportObject(provider).importItems(request, newKey: nil, reply: reply)
                }
            }
        } else {
            let (password, parameters) = (request.password, provider.options.kdf)
            provider.passwordChecks.derive({ Result { () throws(StoreError) in try NewCollectionKey(password: password, parameters: parameters) } }) {
                [weak provider = provider] derived in
                guard let provider else { return }
                switch derived.flatMap({ $0.mapError { SecretServiceError(storeFailure: $0) } }) {
                case .failure(let problem): reply(.failure(problem))
                case .success(let key): ImportObject(provider).importItems(request, newKey: key, reply: reply)
                }
            }
        }
    }

    /// What an import call asks for, checked.
    private struct ImportRequest {
        var name: String
        var label: String
        var times: Store.Times?
        var items: [ImportedItem]
        var existing: Store.CollectionRecord?
        var password: SecureBytes
    }

    /// Checks an import call's arguments from `sender` but its items (``importedItem(_:sender:)``).
    private func checkImport(
        name: String, properties: [String: DBusValue], master: DBusValue, sender: String
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
            name: name, label: label, times: collectionTimes, items: [], existing: existing, password: password))
    }

    /// One item of an import call from `sender`, `(a{sv}(oayays))`, checked, placed in a group
    /// and its secret decoded.
    private func importedItem(_ value: DBusValue, sender: String) throws(SecretServiceError) -> ImportedItem {
        guard let fields = value.tuple, fields.count == 2, let itemProperties = fields[0].variantMap else {
            throw .invalidArgs("each item must be (a{sv}(oayays))")
        }
        guard let itemLabel = itemProperties[SecretServiceNames.Property.itemLabel].map(\.string) ?? "",
            let requested = itemProperties[SecretServiceNames.Property.itemAttributes].map(\.stringMap) ?? [:]
        else { throw .invalidArgs("an item's Label must be s and its Attributes a{ss}") }
        if let problem = Provider.checkItemText(label: itemLabel, attributes: requested) { throw problem }
        var placed: [String: String]
        if let appID = PortalObject.appKeyOwner(requested) {
            // A desktop portal app key (gnome-keyring's, oo7's): into its app's own group (only
            // unconfined clients outside a sandbox import, so the key is the person's to place).
            placed = requested
            placed[AccessGroupNames.attribute] = PortalNames.group(of: appID)
        } else {
            placed = try provider.placeInGroup(requested, for: sender).get()
        }
        let times = try Self.times(itemProperties, prefix: SecretServiceNames.Interface.item).get()
        let (secret, contentType) = try provider.decodeSecret(fields[1], from: sender).get()
        return ImportedItem(label: itemLabel, attributes: placed, secret: secret, contentType: contentType, times: times)
    }

    /// Writes the items (into a new keyring with `newKey` when the request names none that
    /// exists), skipping each that the keyring holds already with the same attributes and secret,
    /// or that an earlier item of the call has; `reply` gets the reply. More than
    /// ``ItemBatchWrite/itemsPerTurn`` items are written off the main loop
    /// (``KeyringImportWrite``), after a new keyring is created on its own; fewer, with it, in
    /// one transaction on the loop.
    private func importItems(
        _ request: ImportRequest, newKey: NewCollectionKey?, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) {
        guard request.items.count > ItemBatchWrite.itemsPerTurn else { return reply(importOnLoop(request, newKey: newKey)) }
        let (collection, keys, isNew): (Store.CollectionRecord, Store.ItemKeys, Bool)
        do throws(StoreError) {
            if let existing = request.existing {
                guard let known = provider.keyring[existing.id] else { throw .locked }
                (collection, keys, isNew) = (existing, known, false)
            } else if let newKey {
                let (created, createdKeys) = try provider.keyring.createCollection(
                    name: request.name, label: request.label, key: newKey, times: request.times)
                (collection, keys, isNew) = (created, createdKeys, true)
            } else {
                throw .invalidInput("a new keyring needs a password")
            }
        } catch {
            return reply(.failure(provider.storeFailure(error)))
        }
        var again = request
        again.existing = collection
        KeyringImportWrite(provider: provider).store(
            request.items, into: collection, keys: keys, isNew: isNew,
            holds: { [provider] item throws(StoreError) in try ImportObject(provider).holds(item, in: collection, key: keys) },
            onLoop: { [provider] in ImportObject(provider).importOnLoop(again, newKey: nil) }, reply: reply)
    }

    /// Writes the items as ``importItems(_:newKey:reply:)`` does, in one transaction on the loop.
    private func importOnLoop(_ request: ImportRequest, newKey: NewCollectionKey?) -> Result<DBusValue, SecretServiceError> {
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
    func holds(_ item: ImportedItem, in collection: Store.CollectionRecord, key: Store.ItemKeys) throws(StoreError) -> Bool {
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
