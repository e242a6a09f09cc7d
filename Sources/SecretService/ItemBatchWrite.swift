// An `ImportItems` batch, sealed and written off the main loop.

import DBusValues
import KeychainCore
import SecretStore

/// Stores a batch of items (`Import1.ImportItems`: `secretctl import`) off the main loop, as
/// ``SealingQueue`` does for one large item, so that a bulk import does not hold other clients
/// up for the batch's seals, inserts and sync: what needs the loop's state (who may see which
/// item, which items the batch replaces or skips) is worked out there first (``Plan``) as the
/// items are read from the call, a few dozen a turn (``itemsPerTurn``) with other clients'
/// calls served between turns; the secrets are decoded and the items sealed on the sealing
/// thread; back on the loop the keyrings are checked again; the whole batch is then written,
/// with its audit entries (``Keyring/recording(_:)``), in one transaction of the store's second
/// connection (``ApartWriter/writeItems(creating:in:replacing:creator:within:recording:)``) off
/// the loop, and published on it, again in turns, before the reply. Whatever cannot be done
/// so (a keyring locked, or locked and unlocked, meanwhile; an item to replace written by
/// someone else in between) is done again on the loop.
struct ItemBatchWrite {
    /// What the objects share.
    let provider: Provider

    /// How many items are read and planned, or published, in one turn of the main loop: about
    /// half a millisecond's work (reading an item from the call and a search each).
    static let itemsPerTurn = 64

    /// One item of a batch, checked (label, attributes, group); its secret as sent, decoded
    /// where it is sealed.
    struct Item: Sendable {
        var label: String
        var attributes: [String: String]
        var secret: SentSecret

        /// Its size as stored (``ItemContents/byteCount(secret:label:attributes:)``).
        var byteCount: Int { ItemContents.byteCount(secret: secret.byteCount, label: label, attributes: attributes) }
    }

    /// What a batch does, worked out on the loop: which of its items are new, which replace
    /// an item (read at which version), and the counts its reply gives.
    struct Plan {
        /// The keyring new items go into, and the keys held for it.
        var target: Store.CollectionRecord
        var keys: Store.ItemKeys
        /// The new items, each with the id it is sealed for (``Store/reserveItemID()``).
        var creating: [(id: Int64, item: Item)] = []
        /// The items replaced, each by the batch's last item with its attributes.
        var replacing: [Replacement] = []
        /// How many items the reply says were imported, replaced (an item the batch itself
        /// created and then replaced counts in both) and skipped.
        var imported = 0, replaced = 0, skipped = 0

        /// Where each set of attributes (`xdg:schema` aside) went, for a later item with the same.
        fileprivate var planned: [[String: String]: Planned] = [:]
        fileprivate enum Planned { case creating(Int), replacing(Int) }

        /// An item the batch replaces, as read on the loop.
        struct Replacement: Sendable {
            var existing: Store.ItemRecord
            var collection: Store.CollectionRecord
            var keys: Store.ItemKeys
            var version: [UInt8]
            var previous: [String: String]
            var item: Item
        }
    }

    /// An item there already with an item's attributes (`xdg:schema` aside), which it replaces
    /// or is skipped for: as read on the loop.
    typealias Match = (existing: Store.ItemRecord, collection: Store.CollectionRecord, keys: Store.ItemKeys, previous: [String: String], version: [UInt8])

    /// Stores the `count` items `item` gives (parsing and checking it, or throwing why it is
    /// refused, which refuses the batch) in `target` (whose keys are `keys`): each item whose
    /// attributes (`xdg:schema` aside) `find` finds there already, or an earlier item of the
    /// batch has, is skipped, or with `replace` replaces it; the others are created (counting
    /// for `creator`'s quota). `reply` runs on the loop with the reply to `ImportItems` or why
    /// there is none; `onLoop` stores the items given on the loop at once, with the keyrings as
    /// they are then. `planned` runs once the plan is made and its items are claimed
    /// (``BatchesInFlight``): a batch planned from then on sees them as in flight, so the
    /// client's next batch may be planned while this one is written.
    func store(
        count: Int, item: @escaping (Int) throws(SecretServiceError) -> Item,
        into target: Store.CollectionRecord, keys: Store.ItemKeys, replace: Bool, creator: String?,
        find: @escaping (Item) throws(StoreError) -> Match?,
        onLoop: @escaping ([Item]) -> Result<DBusValue, SecretServiceError>,
        planned: @escaping () -> Void = {},
        reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) {
        let accessor = provider.keyring.accessor
        let inFlight = provider.batchesInFlight
        let batch = inFlight.begin()
        let answer = inFlight.ending(batch, before: reply)
        var plan = Plan(target: target, keys: keys)
        var items: [Item] = []
        items.reserveCapacity(count)
        provider.offLoop.inTurns(count, of: Self.itemsPerTurn, { slice in
            provider.keyring.acting(as: accessor) { () -> Bool in
                do throws(SecretServiceError) {
                    // Between turns the keyring may have been locked (its items would no longer be found) or deleted.
                    guard case .success(let held) = provider.keyring.keysAfterSealing(in: target, sealedWith: keys), held.same else {
                        while items.count < count { items.append(try item(items.count)) }
                        answer(onLoop(items))
                        return false
                    }
                    for index in slice {
                        items.append(try item(index))
                        let identity = ItemIdentity.of(items[index].attributes)
                        guard inFlight.claim(identity, for: batch) else {
                            // Another batch in flight has this item: this one lets its own go and
                            // is planned anew, as a whole, once a batch has ended.
                            inFlight.end(batch)
                            inFlight.afterNextEnd(as: provider.keyring) {
                                store(
                                    count: count, item: item, into: target, keys: keys, replace: replace, creator: creator,
                                    find: find, onLoop: onLoop, planned: planned, reply: reply)
                            } failed: { reply(.failure($0)) }
                            return false
                        }
                        do throws(StoreError) {
                            try add(items[index], identity, to: &plan, replace: replace, find: find)
                        } catch {
                            throw provider.storeFailure(error)
                        }
                    }
                    return true
                } catch {
                    answer(.failure(error))
                    return false
                }
            }
        }, then: {
            planned()
            write(plan, creator: creator, as: accessor, onLoop: { [items] in onLoop(items) }, reply: answer)
        })
    }

    /// Adds `item`, whose identity is `wanted` (``ItemIdentity/of(_:)``), to `plan`: as a new
    /// item, a replacement (with `replace`) or one skipped.
    private func add(_ item: Item, _ wanted: [String: String], to plan: inout Plan, replace: Bool, find: (Item) throws(StoreError) -> Match?)
        throws(StoreError)
    {
        if let earlier = plan.planned[wanted] {
            guard replace else { return plan.skipped += 1 }
            switch earlier {
            case .creating(let index): plan.creating[index].item = item
            case .replacing(let index): plan.replacing[index].item = item
            }
            plan.replaced += 1
        } else if let match = try find(item) {
            guard replace else { return plan.skipped += 1 }
            plan.planned[wanted] = .replacing(plan.replacing.count)
            plan.replacing.append(.init(
                existing: match.existing, collection: match.collection, keys: match.keys, version: match.version, previous: match.previous,
                item: item))
            plan.replaced += 1
        } else {
            plan.planned[wanted] = .creating(plan.creating.count)
            plan.creating.append((try provider.keyring.store.reserveItemID(), item))
            plan.imported += 1
        }
    }

    /// What the sealing thread made of a plan's items.
    private enum Sealed {
        case ready(creating: [Store.SealedItem], replacing: [Store.SealedReplacement])
        /// An item's secret could not be decoded: the batch is refused.
        case refused(SecretServiceError)
        /// Not done: an item could not be sealed there; the loop does it all.
        case onLoop
    }

    /// Seals and writes `plan` for `accessor` (who asked: the audit trail names it), then
    /// publishes it; as ``store(count:item:into:keys:replace:creator:find:onLoop:planned:reply:)``.
    private func write(
        _ plan: Plan, creator: String?, as accessor: Accessor,
        onLoop: @escaping () -> Result<DBusValue, SecretServiceError>,
        reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) {
        guard let apart = provider.keyring.store.apartWriter() else { return reply(onLoop()) }
        let (target, keys) = (plan.target, plan.keys)
        let (creating, replacing) = (plan.creating, plan.replacing)
        provider.sealing.seal({ () -> Sealed in
            var sealedNew: [Store.SealedItem] = []
            var sealedChanges: [Store.SealedReplacement] = []
            sealedNew.reserveCapacity(creating.count)
            do throws(SecretServiceError) {
                for (id, item) in creating {
                    guard let sealed = try Self.seal(item, as: id, in: target, keys: keys) else { return .onLoop }
                    sealedNew.append(sealed)
                }
                for change in replacing {
                    guard let sealed = try Self.seal(change.item, as: change.existing.id, in: change.collection, keys: change.keys)
                    else { return .onLoop }
                    sealedChanges.append(Store.SealedReplacement(
                        sealed, replacing: change.existing, version: change.version, previous: change.previous, in: change.collection))
                }
            } catch {
                return .refused(error)
            }
            return .ready(creating: sealedNew, replacing: sealedChanges)
        }) { [provider] sealed -> SealingQueue.AfterSealing in
            provider.keyring.acting(as: accessor) { () -> SealingQueue.AfterSealing in
                let step = ApartWriteStep(provider: provider, accessor: accessor)
                let written = [(target, keys)] + replacing.map { ($0.collection, $0.keys) }
                guard let same = step.keysUnchanged(written, reply: reply) else { return .finished }
                switch sealed {
                case .refused(let refusal):
                    reply(.failure(refusal))
                    return .finished
                case .ready(let sealedNew, let sealedChanges) where same:
                    let quota = provider.quota
                    let counts = DBusValue.tuple([.uint32(UInt32(plan.imported)), .uint32(UInt32(plan.replaced)), .uint32(UInt32(plan.skipped))])
                    return step.write(
                        sealedNew.map { .init(sealed: $0, collection: target, isNew: true) }
                            + sealedChanges.map { .init(sealed: $0.sealed, collection: $0.collection, isNew: false) },
                        { (recording) throws(StoreError) in
                            try apart.writeItems(
                                creating: sealedNew, in: target, replacing: sealedChanges, creator: creator, within: quota, recording: recording)
                        },
                        published: { written, recorded, done in
                            let (created, replaced) = written
                            let events = created.indices.map { index in
                                { provider.keyring.createdApart(created[index], from: sealedNew[index], in: target, recorded: recorded) }
                            }
                                + replaced.indices.map { index in
                                    let change = sealedChanges[index]
                                    return {
                                        provider.keyring.updatedApart(
                                            change.item, into: replaced[index], from: change.sealed, in: change.collection, recorded: recorded)
                                    }
                                }
                            publish(events, as: accessor) { done(counts) }
                        },
                        onLoop: onLoop, reply: reply)
                case .ready, .onLoop:
                    reply(onLoop())
                    return .finished
                }
            }
        }
    }

    /// `item` decoded and sealed for the item `id` of `collection` with `keys` (on the sealing
    /// thread); nil when it cannot be sealed there; throws when its secret cannot be decoded.
    private static func seal(_ item: Item, as id: Int64, in collection: Store.CollectionRecord, keys: Store.ItemKeys)
        throws(SecretServiceError) -> Store.SealedItem?
    {
        let contents = try item.secret.contents(label: item.label, attributes: item.attributes).get()
        return try? Store.seal(contents, as: id, in: collection, keys: keys)
    }

    /// Runs `events` (each publishes an item written) as `accessor`, ``itemsPerTurn`` a turn of
    /// the loop, then `done`.
    func publish(_ events: [() -> Void], as accessor: Accessor, then done: @escaping () -> Void) {
        provider.offLoop.inTurns(events.count, of: Self.itemsPerTurn, { [provider] slice in
            provider.keyring.acting(as: accessor) { for event in events[slice] { event() } }
            return true
        }, then: done)
    }
}
