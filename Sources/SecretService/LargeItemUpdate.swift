// A large item's update, sealed and written off the main loop.

import SecretStore

/// Gives an existing large item (``SealingQueue/threshold`` bytes or more, before or after)
/// new contents off the main loop, as ``SealingQueue`` does for a new one: its row is read
/// and opened, changed and sealed on the sealing thread through the store's second connection
/// (``ApartWriter``); back on the loop the keyring is checked again; the row is then written
/// off the loop, provided nothing wrote it since it was read; the change is published and
/// answered. Whatever cannot be done so (the keyring locked and unlocked meanwhile, the item
/// written by someone else in between) is done again on the loop with the item as it is then.
struct LargeItemUpdate {
    /// What the objects share.
    let provider: Provider

    /// What the sealing thread made of the item.
    private enum Sealed {
        /// The new row, and the attributes and version of the row it replaces.
        case ready(Store.SealedItem, previous: [String: String], version: [UInt8])
        /// The change refused the item's contents (a secret that cannot be decoded, text too long).
        case refused(SecretServiceError)
        /// Not done: the item could not be read or sealed there; the loop does it all.
        case onLoop
    }

    /// Gives `item` of `collection` the contents `change` makes of its current ones (or says
    /// why not), opened and sealed with `keys`. `reply` runs on the loop with the `answer` for
    /// the updated item, or why there is none; `onLoop` is the same call done on the loop, with
    /// the item and keys as they are then.
    func update<Answer>(
        _ item: Store.ItemRecord, in collection: Store.CollectionRecord, keys: Store.ItemKeys,
        change: @escaping @Sendable (inout ItemContents) -> SecretServiceError?,
        answer: @escaping (Store.ItemRecord) -> Answer,
        onLoop: @escaping () -> Result<Answer, SecretServiceError>,
        reply: @escaping (Result<Answer, SecretServiceError>) -> Void
    ) {
        guard let apart = provider.keyring.store.apartWriter() else { return reply(onLoop()) }
        let accessor = provider.keyring.accessor
        provider.sealing.seal({ () -> Sealed in
            guard let (current, version) = try? apart.readItem(item, in: collection, keys: keys) else { return .onLoop }
            var contents = current
            if let refusal = change(&contents) ?? Provider.checkItemText(label: contents.label, attributes: contents.attributes) {
                return .refused(refusal)
            }
            guard let sealed = try? Store.seal(contents, as: item.id, in: collection, keys: keys) else { return .onLoop }
            return .ready(sealed, previous: current.attributes, version: version)
        }) { [provider] sealed -> SealingQueue.AfterSealing in
            provider.keyring.acting(as: accessor) { () -> SealingQueue.AfterSealing in
                let step = ApartWriteStep(provider: provider, accessor: accessor)
                guard let same = step.keysUnchanged([(collection, keys)], reply: reply) else { return .finished }
                switch sealed {
                case .refused(let refusal):
                    reply(.failure(refusal))
                    return .finished
                case .ready(let row, let previous, let version) where same:
                    let quota = provider.quota
                    return step.write(
                        [.init(sealed: row, collection: collection, isNew: false)],
                        { (recording) throws(StoreError) -> Store.ItemRecord in
                            try apart.updateItem(
                                row, replacing: item, version: version, previous: previous, in: collection, within: quota, recording: recording)
                        },
                        published: { updated, recorded, done in
                            provider.keyring.updatedApart(item, into: updated, from: row, in: collection, recorded: recorded)
                            done(answer(updated))
                        },
                        onLoop: onLoop, reply: reply)
                case .ready, .onLoop:
                    reply(onLoop())
                    return .finished
                }
            }
        }
    }
}
