// An `ImportKeyring`'s items, sealed and written off the main loop.

import DBusValues
import SecretCrypto
import SecretStore

/// Writes the items of an `ImportKeyring` call (`secretctl import gnome-keyring`, `kwallet`,
/// `secret-service`: a whole keyring at once) off the main loop, as ``ItemBatchWrite`` does an
/// `ImportItems` batch, so that migrating a large keyring does not hold other clients up: on
/// the loop, ``ItemBatchWrite/itemsPerTurn`` items a turn, each item the keyring holds already
/// with the same attributes and secret, or that an earlier item of the call is, is skipped
/// and the others get their ids; the items are sealed, with their own times, on the sealing
/// thread; back on the loop the keyring is checked again; they are then written in one
/// transaction of the store's second connection (``ApartWriteStep``) and published, in turns,
/// before the reply. A keyring locked, or locked and unlocked, meanwhile has the items written
/// on the loop instead. A keyring the import created is deleted again when its items cannot be
/// written, so that a failed import leaves nothing behind.
struct KeyringImportWrite {
    /// What the objects share.
    let provider: Provider

    /// What the sealing thread made of the items.
    private enum Sealed {
        case ready([Store.SealedItem])
        /// Not done: an item could not be sealed there; the loop does it all.
        case onLoop
    }

    /// Writes `items` into `collection` (held with `keys`; `isNew` when the import has just
    /// created it): each that `holds` finds there already, or that an earlier item has with the
    /// same attributes and secret, is skipped. `reply` runs on the loop with `ImportKeyring`'s
    /// reply or why there is none; `onLoop` writes the items on the loop at once, with the
    /// keyring as it is then.
    func store(
        _ items: [ImportObject.ImportedItem], into collection: Store.CollectionRecord, keys: Store.ItemKeys, isNew: Bool,
        holds: @escaping (ImportObject.ImportedItem) throws(StoreError) -> Bool,
        onLoop: @escaping () -> Result<DBusValue, SecretServiceError>,
        reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) {
        let accessor = provider.keyring.accessor
        let finish = { [provider] (result: Result<DBusValue, SecretServiceError>) in
            if case .failure = result, isNew, let there = try? provider.keyring.collection(named: collection.name), there.id == collection.id {
                do throws(StoreError) {
                    try provider.keyring.deleteCollection(there)
                } catch {
                    Log.error("cannot delete the keyring \(collection.name) after its import failed: \(error)")
                }
            }
            reply(result)
        }
        var creating: [(id: Int64, item: ImportObject.ImportedItem)] = []
        // The items planned, by attributes, for a later item with the same attributes and secret.
        var planned: [[String: String]: [Int]] = [:]
        var skipped = 0
        provider.offLoop.inTurns(items.count, of: ItemBatchWrite.itemsPerTurn, { [provider] slice in
            provider.keyring.acting(as: accessor) { () -> Bool in
                // Between turns the keyring may have been locked (its items would no longer be found) or deleted.
                guard case .success(let held) = provider.keyring.keysAfterSealing(in: collection, sealedWith: keys), held.same else {
                    finish(onLoop())
                    return false
                }
                do throws(StoreError) {
                    for item in items[slice] {
                        let earlier = planned[item.attributes] ?? []
                        var there = earlier.contains { creating[$0].item.secret.constantTimeEquals(item.secret) }
                        if !there && !isNew { there = try holds(item) }
                        if there {
                            skipped += 1
                            continue
                        }
                        planned[item.attributes, default: []].append(creating.count)
                        creating.append((try provider.keyring.store.reserveItemID(), item))
                    }
                } catch {
                    finish(.failure(provider.storeFailure(error)))
                    return false
                }
                return true
            }
        }, then: {
            write(creating, skipped: skipped, into: collection, keys: keys, as: accessor, onLoop: onLoop, reply: finish)
        })
    }

    /// Seals and writes `creating`, then publishes it; as ``store(_:into:keys:isNew:holds:onLoop:reply:)``.
    private func write(
        _ creating: [(id: Int64, item: ImportObject.ImportedItem)], skipped: Int, into collection: Store.CollectionRecord,
        keys: Store.ItemKeys, as accessor: Accessor,
        onLoop: @escaping () -> Result<DBusValue, SecretServiceError>,
        reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) {
        guard let apart = provider.keyring.store.apartWriter() else { return reply(onLoop()) }
        provider.sealing.seal({ () -> Sealed in
            var sealed: [Store.SealedItem] = []
            sealed.reserveCapacity(creating.count)
            for (id, item) in creating {
                let contents = ItemContents(label: item.label, attributes: item.attributes, secret: item.secret, contentType: item.contentType)
                guard var row = try? Store.seal(contents, as: id, in: collection, keys: keys) else { return .onLoop }
                row.times = item.times
                sealed.append(row)
            }
            return .ready(sealed)
        }) { [provider] sealed -> SealingQueue.AfterSealing in
            provider.keyring.acting(as: accessor) { () -> SealingQueue.AfterSealing in
                let step = ApartWriteStep(provider: provider, accessor: accessor)
                guard let same = step.keysUnchanged([(collection, keys)], reply: reply) else { return .finished }
                guard same, case .ready(let rows) = sealed else {
                    reply(onLoop())
                    return .finished
                }
                return step.write(
                    rows.map { .init(sealed: $0, collection: collection, isNew: true) },
                    { (recording) throws(StoreError) in
                        try apart.writeItems(creating: rows, in: collection, replacing: [], creator: nil, within: nil, recording: recording).created
                    },
                    published: { created, recorded, done in
                        let events = created.indices.map { index in
                            { provider.keyring.createdApart(created[index], from: rows[index], in: collection, recorded: recorded) }
                        }
                        ItemBatchWrite(provider: provider).publish(events, as: accessor) {
                            Log.info("imported \(created.count) items into the \(collection.name) keyring (\(skipped) were there already)")
                            done(.tuple([
                                .objectPath(ObjectPaths.collection(collection.name)), .uint32(UInt32(created.count)), .uint32(UInt32(skipped)),
                            ]))
                        }
                    },
                    onLoop: onLoop, reply: reply)
            }
        }
    }
}
