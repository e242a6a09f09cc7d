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
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   let secret = try provider.sentSecret(call.argument(1), from: call.sender).get()
                   try CollectionObject(provider).createItem(
                       in: call.collection(), properties: call.argument(0), secret: secret,
                       replace: call.argument(2), sender: call.sender, reply: reply)
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

    /// `CreateItem`: answers through `reply` at once or, for a large item, once its secret has
    /// been decoded and the item sealed off the loop (``SealingQueue``) and written. What fails
    /// at once is thrown, so that a refusal is reported as every call's is (``CallRouter``).
    fileprivate func createItem(
        in collection: Store.CollectionRecord, properties: [String: DBusValue], secret: SentSecret,
        replace: Bool, sender: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) throws(SecretServiceError) {
        // After an ordinary lock, the kept keys still create after-first-unlock items; the
        // store refuses any other class (`.locked`).
        guard let keys = provider.keyring.held(collection.id) else { throw .isLocked("the collection is locked") }
        let labelValue = properties[SecretServiceNames.Property.itemLabel]
        let attributesValue = properties[SecretServiceNames.Property.itemAttributes]
        guard let label = labelValue.map(\.string) ?? "" else {
            throw .invalidArgs("\(SecretServiceNames.Property.itemLabel) must be a string (s)")
        }
        guard let requested = attributesValue.map(\.stringMap) ?? [:] else {
            throw .invalidArgs("\(SecretServiceNames.Property.itemAttributes) must be a{ss}")
        }
        if let problem = Provider.checkItemText(label: label, attributes: requested) { throw problem }
        let attributes = try provider.placeInGroup(requested, for: sender).get()
        // An item an import batch has planned and not yet written (``BatchesInFlight``) is
        // replaced once that batch has ended, so that it is not made twice.
        if replace, provider.batchesInFlight.holdsAny(of: [ItemIdentity.of(attributes)]) {
            return provider.batchesInFlight.afterNextEnd(as: provider.keyring) { [self] () throws(SecretServiceError) in
                try createItem(in: collection, properties: properties, secret: secret, replace: replace, sender: sender, reply: reply)
            } failed: { reply(.failure($0)) }
        }
        let creator = try? provider.caller(sender).get().identity.description
        let large = ItemContents.byteCount(secret: secret.byteCount, label: label, attributes: attributes) >= SealingQueue.threshold
        // On the loop, with the keys held then: stored as a small item is.
        let onLoop = { [provider] () -> Result<DBusValue, SecretServiceError> in
            guard let keys = provider.keyring.held(collection.id) else { return .failure(.isLocked("the keyring is locked")) }
            return secret.contents(label: label, attributes: attributes).flatMap { contents in
                let write = ItemWrite(collection: collection, contents: contents, replace: replace, sender: sender, creator: creator)
                return CollectionObject(provider).store(write, keys: keys, sealed: nil)
            }
        }
        guard large else { return reply(.success(try onLoop().get())) }
        // Written later, off the loop: until it is answered the item is held as an import
        // batch's is (``BatchesInFlight``), so that a batch planned meanwhile does not make it
        // again. Every way out below ends the hold: the answer, or a throw.
        let inFlight = provider.batchesInFlight
        let hold = inFlight.begin()
        _ = inFlight.claim(ItemIdentity.of(attributes), for: hold)
        let answer = inFlight.ending(hold, before: reply)
        if replace {
            let target: Store.ItemRecord?
            do throws(StoreError) {
                target = try replaced(attributes, in: collection, for: sender, keys: keys)
            } catch {
                inFlight.end(hold)
                throw provider.storeFailure(error)
            }
            if let target {
                // Replaced off the loop as well (``LargeItemUpdate``).
                LargeItemUpdate(provider: provider).update(target, in: collection, keys: keys, change: { contents in
                    switch secret.contents(label: label, attributes: attributes) {
                    case .success(let replacing):
                        contents = replacing
                        return nil
                    case .failure(let refusal):
                        return refusal
                    }
                }, answer: { [self] in self.reply(created: $0, in: collection) }, onLoop: onLoop, reply: answer)
                return
            }
        }
        // Decoded and sealed off the loop for the id it will have. Once sealed, checked again on
        // the loop: the keyring was deleted or locked meanwhile (an error), locked and unlocked
        // (other key objects) or an item to replace turned up (stored as a small one is, on the
        // loop). Otherwise its row is written off the loop too, through the store's second
        // connection (``ApartWriter``), and published once it is durable.
        let id: Int64
        do throws(StoreError) {
            id = try provider.keyring.store.reserveItemID()
        } catch {
            inFlight.end(hold)
            throw provider.storeFailure(error)
        }
        let accessor = provider.keyring.accessor
        provider.sealing.seal({
            secret.contents(label: label, attributes: attributes).map { contents in
                SealedCreate(contents: contents, row: Result { () throws(StoreError) in
                    try Store.seal(contents, as: id, in: collection, keys: keys)
                })
            }
        }) { [provider] sealing -> SealingQueue.AfterSealing in
            provider.keyring.acting(as: accessor) { () -> SealingQueue.AfterSealing in
                let sealed: SealedCreate
                switch sealing {
                case .success(let item): sealed = item
                case .failure(let problem):
                    answer(.failure(problem))
                    return .finished
                }
                let write = ItemWrite(collection: collection, contents: sealed.contents, replace: replace, sender: sender, creator: creator)
                let (current, same): (Store.ItemKeys, Bool)
                switch provider.keyring.keysAfterSealing(in: collection, sealedWith: keys) {
                case .success(let held): (current, same) = held
                case .failure(let problem):
                    answer(.failure(problem))
                    return .finished
                }
                let object = CollectionObject(provider)
                guard same, case .success(let sealedItem) = sealed.row, !object.mayReplace(write, keys: current),
                    let apart = provider.keyring.store.apartWriter()
                else {
                    answer(object.store(write, keys: current, sealed: same ? try? sealed.row.get() : nil))
                    return .finished
                }
                let quota = provider.quota
                return ApartWriteStep(provider: provider, accessor: accessor).write(
                    [.init(sealed: sealedItem, collection: collection, isNew: true)],
                    { (recording) throws(StoreError) -> Store.ItemRecord in
                        try apart.createItem(sealedItem, in: collection, creator: creator, within: quota, recording: recording)
                    },
                    published: { item, recorded, done in
                        provider.keyring.createdApart(item, from: sealedItem, in: collection, recorded: recorded)
                        done(object.reply(created: item, in: collection))
                    },
                    onLoop: {
                        guard let keys = provider.keyring.held(collection.id) else { return .failure(.isLocked("the keyring is locked")) }
                        return object.store(write, keys: keys, sealed: nil)
                    },
                    reply: answer)
            }
        }
    }

    /// A large new item as its seal left it (``SealingQueue``): its contents, decoded off the
    /// loop, and its sealed row, or why it could not be sealed there (then it is stored on the loop).
    private struct SealedCreate: Sendable {
        var contents: ItemContents
        var row: Result<Store.SealedItem, StoreError>
    }

    /// `CreateItem`'s reply for `item`: its path, and no prompt.
    private func reply(created item: Store.ItemRecord, in collection: Store.CollectionRecord) -> DBusValue {
        .tuple([.objectPath(ObjectPaths.item(collection.name, item.id)), .objectPath(ObjectPaths.none)])
    }

    /// What one `CreateItem` writes.
    private struct ItemWrite {
        var collection: Store.CollectionRecord
        var contents: ItemContents
        var replace: Bool
        var sender: String
        var creator: String?
    }

    /// The item a write of an item with `attributes` by `sender` replaces (`replace`: one
    /// `sender` may use, with exactly those attributes), if any.
    private func replaced(
        _ attributes: [String: String], in collection: Store.CollectionRecord, for sender: String, keys: Store.ItemKeys
    ) throws(StoreError) -> Store.ItemRecord? {
        for (candidate, access) in provider.visible(try provider.keyring.search(attributes, in: collection), for: sender)
        where access == .full {
            let existing = try provider.keyring.readItem(candidate, in: collection, keys: keys)
            if existing.attributes == attributes { return candidate }
        }
        return nil
    }

    /// Whether `write` asks to replace and an item to replace is there, or cannot be looked for
    /// (then ``store(_:keys:sealed:)``, on the loop, finds out and says).
    private func mayReplace(_ write: ItemWrite, keys: Store.ItemKeys) -> Bool {
        guard write.replace else { return false }
        do throws(StoreError) {
            return try replaced(write.contents.attributes, in: write.collection, for: write.sender, keys: keys) != nil
        } catch {
            return true
        }
    }

    /// Stores `write`: replaces the item it replaces, or creates it, from `sealed` when that
    /// was sealed for it and nothing is to be replaced; `CreateItem`'s reply.
    private func store(_ write: ItemWrite, keys: Store.ItemKeys, sealed: Store.SealedItem?) -> Result<DBusValue, SecretServiceError> {
        let collection = write.collection
        do throws(StoreError) {
            let item: Store.ItemRecord
            if write.replace, let existing = try replaced(write.contents.attributes, in: collection, for: write.sender, keys: keys) {
                item = try provider.keyring.updateItem(existing, in: collection, keys: keys, contents: write.contents, within: provider.quota)
            } else if let sealed {
                item = try provider.keyring.createItem(sealed, in: collection, creator: write.creator, within: provider.quota)
            } else {
                item = try provider.keyring.createItem(in: collection, keys: keys, contents: write.contents, creator: write.creator, within: provider.quota)
            }
            return .success(reply(created: item, in: collection))
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
