// io.github.secretd.Import1: ImportItems and ReadItems, the bulk calls of `secretctl import FILE`
// and `secretctl export` / `list` (issue 51, point 6).

import DBusValues
import KeychainCore
import SecretCrypto
import SecretStore

extension ImportObject {
    /// The most item paths one `ReadItems` call may name, so that no reply grows with the keyring.
    static let readLimit = 10_000

    /// `ImportItems`: writes a batch of items into the keyring of the alias `alias` (the default
    /// keyring when it is empty) in one transaction. An item whose attributes (`xdg:schema`
    /// aside) an item holds already (in that keyring; with an empty alias, in any unlocked one)
    /// is skipped, or with `replace` gets the new label and secret. Every item is checked first:
    /// one bad item refuses the batch and nothing is written. A batch of more than
    /// ``ItemBatchWrite/itemsPerTurn`` items or of ``SealingQueue/threshold`` bytes is stored off
    /// the main loop (``ItemBatchWrite``), a smaller one on it at once; `planned` runs once the
    /// batch's plan is made (the client's next batch may then be planned: ``BatchesInFlight``).
    /// One that has an item of a batch in flight waits until that batch has ended. `reply` runs
    /// on the loop with the reply.
    func importBatch(
        collection alias: String, replace: Bool, items itemValues: [DBusValue], sender: String,
        planned: @escaping () -> Void, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) throws(SecretServiceError) {
        try importBatch(collection: alias, replace: replace, count: itemValues.count, sender: sender, planned: planned, reply: reply) {
            [provider] index throws(SecretServiceError) in
            try ImportObject(provider).batchItem(itemValues[index], sender: sender)
        }
    }

    /// `ImportPackedItems`: ``importBatch(collection:replace:items:sender:planned:reply:)`` with the
    /// items packed in one byte array (``PackedItems``), their secrets all encoded by one session.
    func importPackedBatch(
        collection alias: String, replace: Bool, packed: DBusBytes, sender: String,
        planned: @escaping () -> Void, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void
    ) throws(SecretServiceError) {
        let (sessionPath, items): (String, [PackedItems.Item])
        do { (sessionPath, items) = try PackedItems.unpack(packed) } catch { throw .invalidArgs(error.description) }
        // Looked up once: every secret of the batch was encoded in it. An empty batch needs
        // none (and reads no item).
        let session = items.isEmpty ? nil : try provider.session(at: sessionPath, for: sender).get()
        try importBatch(collection: alias, replace: replace, count: items.count, sender: sender, planned: planned, reply: reply) {
            [provider] index throws(SecretServiceError) in
            let item = items[index]
            let secret = try provider.sentSecret(
                parameters: item.parameters, value: item.value, contentType: item.contentType, in: session!).get()
            return try ImportObject(provider).batchItem(label: item.label, attributes: item.attributes, secret: secret, sender: sender)
        }
    }

    /// Stores the `count` items `item` reads from a call (``importBatch(collection:replace:items:sender:planned:reply:)``).
    private func importBatch(
        collection alias: String, replace: Bool, count: Int, sender: String,
        planned: @escaping () -> Void, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void,
        item read: @escaping (Int) throws(SecretServiceError) -> ItemBatchWrite.Item
    ) throws(SecretServiceError) {
        let everywhere = alias.isEmpty
        guard let target = provider.resolveAlias(everywhere ? "default" : alias) else {
            throw .noSuchObject("no keyring has the alias \(everywhere ? "default" : alias)")
        }
        guard let targetKeys = provider.keyring.held(target.id) else { throw .isLocked("the keyring \(target.name) is locked") }
        let creator = try? provider.caller(sender).get().identity.description
        let onLoop = { [provider] (batch: [ItemBatchWrite.Item]) -> Result<DBusValue, SecretServiceError> in
            ImportObject(provider).storeOnLoop(batch, into: alias, replace: replace, sender: sender, creator: creator)
        }
        var item = read
        if count <= ItemBatchWrite.itemsPerTurn {
            var batch: [ItemBatchWrite.Item] = []
            for index in 0..<count { batch.append(try read(index)) }
            if batch.reduce(0, { $0 + $1.byteCount }) < SealingQueue.threshold {
                // Written at once, so claiming nothing; but not before a batch in flight with
                // one of its items has ended (``BatchesInFlight``).
                guard provider.batchesInFlight.holdsAny(of: batch.map { ItemIdentity.of($0.attributes) }) else {
                    return reply(onLoop(batch))
                }
                return provider.batchesInFlight.afterNextEnd(as: provider.keyring) { [self] () throws(SecretServiceError) in
                    try importBatch(collection: alias, replace: replace, count: count, sender: sender, planned: planned, reply: reply) {
                        index in batch[index]
                    }
                } failed: { reply(.failure($0)) }
            }
            item = { index in batch[index] }
        }
        ItemBatchWrite(provider: provider).store(
            count: count, item: item, into: target, keys: targetKeys, replace: replace, creator: creator,
            find: { [provider] item throws(StoreError) in
                try ImportObject(provider).sameItem(item.attributes, in: everywhere ? nil : target, sender: sender)
            }, onLoop: onLoop, planned: planned, reply: reply)
    }

    /// One item of an `ImportItems` call from `sender`, `(a{sv}(oayays))`, checked (its secret
    /// against its session and the size limit, not yet decoded) and placed in a group.
    private func batchItem(_ value: DBusValue, sender: String) throws(SecretServiceError) -> ItemBatchWrite.Item {
        guard let fields = value.tuple, fields.count == 2, let properties = fields[0].variantMap else {
            throw .invalidArgs("each item must be (a{sv}(oayays))")
        }
        guard let label = properties[SecretServiceNames.Property.itemLabel].map(\.string) ?? "",
            let requested = properties[SecretServiceNames.Property.itemAttributes].map(\.stringMap) ?? [:]
        else { throw .invalidArgs("an item's Label must be s and its Attributes a{ss}") }
        return try batchItem(label: label, attributes: requested, secret: try provider.sentSecret(fields[1], from: sender).get(), sender: sender)
    }

    /// An item of a batch from `sender` with `label`, the `requested` attributes and `secret`,
    /// checked and placed in a group.
    private func batchItem(label: String, attributes requested: [String: String], secret: SentSecret, sender: String)
        throws(SecretServiceError) -> ItemBatchWrite.Item
    {
        guard !ItemIdentity.of(requested).isEmpty else { throw .invalidArgs("an item needs attributes") }
        if let problem = Provider.checkItemText(label: label, attributes: requested) { throw problem }
        return ItemBatchWrite.Item(label: label, attributes: try provider.placeInGroup(requested, for: sender).get(), secret: secret)
    }

    /// Writes `batch` into the keyring of the alias `alias` on the loop, in one transaction,
    /// as ``importBatch(collection:replace:items:sender:planned:reply:)`` describes.
    private func storeOnLoop(_ batch: [ItemBatchWrite.Item], into alias: String, replace: Bool, sender: String, creator: String?)
        -> Result<DBusValue, SecretServiceError>
    {
        let everywhere = alias.isEmpty
        guard let target = provider.resolveAlias(everywhere ? "default" : alias) else {
            return .failure(.noSuchObject("no keyring has the alias \(everywhere ? "default" : alias)"))
        }
        guard let targetKeys = provider.keyring.held(target.id) else { return .failure(.isLocked("the keyring \(target.name) is locked")) }
        var decoded: [ItemContents] = []
        decoded.reserveCapacity(batch.count)
        for item in batch {
            switch item.secret.contents(label: item.label, attributes: item.attributes) {
            case .failure(let problem): return .failure(problem)
            case .success(let contents): decoded.append(contents)
            }
        }
        do {
            let (imported, replaced, skipped) = try provider.keyring.transaction { () throws(StoreError) -> (Int, Int, Int) in
                var (imported, replaced, skipped) = (0, 0, 0)
                for contents in decoded {
                    if let (existing, collection, keys, _, _) = try sameItem(contents.attributes, in: everywhere ? nil : target, sender: sender) {
                        guard replace else {
                            skipped += 1
                            continue
                        }
                        _ = try provider.keyring.updateItem(existing, in: collection, keys: keys, contents: contents, within: provider.quota)
                        replaced += 1
                    } else {
                        _ = try provider.keyring.createItem(in: target, keys: targetKeys, contents: contents, creator: creator)
                        imported += 1
                    }
                }
                // The quota, once for the batch rather than after each item as CreateItem does: a
                // batch that passes it is refused whole either way, inside its own transaction.
                try checkQuota(creator: creator)
                return (imported, replaced, skipped)
            }
            return .success(.tuple([.uint32(UInt32(imported)), .uint32(UInt32(replaced)), .uint32(UInt32(skipped))]))
        } catch {
            return .failure(provider.storeFailure(error))
        }
    }

    /// Refuses (`.overQuota`) what takes the program `creator`, or the database, past secretd.conf's quota.
    private func checkQuota(creator: String?) throws(StoreError) {
        let quota = provider.quota
        if let creator {
            let usage = try provider.keyring.store.usage(of: creator)
            if usage.items > quota.items { throw .overQuota(.items(quota.items)) }
            if usage.bytes > quota.bytes { throw .overQuota(.bytes(quota.bytes)) }
        }
        if try provider.keyring.store.databaseSize() > quota.databaseBytes { throw .overQuota(.database(quota.databaseBytes)) }
    }

    /// The first item `sender` may read, in `collection` or in any, whose attributes are
    /// `attributes` (`xdg:schema` aside), as it is now.
    private func sameItem(_ attributes: [String: String], in collection: Store.CollectionRecord?, sender: String) throws(StoreError)
        -> ItemBatchWrite.Match?
    {
        let wanted = ItemIdentity.of(attributes)
        let collections = try provider.keyring.collections()
        for (candidate, access) in provider.visible(try provider.searchItems(wanted, in: collection), for: sender) where access == .full {
            guard let keys = provider.keyring.opening(candidate),
                let home = collections.first(where: { $0.id == candidate.collectionID })
            else { continue }
            let (contents, version) = try provider.keyring.readItemAndVersion(candidate, in: home, keys: keys)
            if ItemIdentity.of(contents.attributes) == wanted { return (candidate, home, keys, contents.attributes, version) }
        }
        return nil
    }

    /// `ReadItems`: the `Label`, `Attributes`, `Created`, `Modified` and `Locked` of each item
    /// of `paths` that `sender` may see (at most ``readLimit``), and with a session (not `/`)
    /// its `Secret` encoded for it, as `GetSecrets` would; a locked item has no label,
    /// attributes or secret, and a path that names no item it may see is left out.
    func readItems(_ paths: [String], sessionPath: String, sender: String) -> Result<DBusValue, SecretServiceError> {
        var entries: [DBusValue.Entry] = []
        entries.reserveCapacity(paths.count)
        let problem = read(paths, sessionPath: sessionPath, sender: sender, route: "Import1.ReadItems") { item in
            var properties: [String: DBusValue] = [
                "Created": .uint64(item.created), "Modified": .uint64(item.modified), "Locked": .boolean(item.isLocked),
                "Label": .string(item.label), "Attributes": .stringMap(item.attributes),
            ]
            if let (parameters, value, contentType) = item.secret {
                properties["Secret"] = .tuple([.objectPath(sessionPath), .bytes(parameters), .bytes(value), .string(contentType)])
            }
            entries.append(.init(key: .objectPath(item.path), value: .properties(properties)))
        }
        if let problem { return .failure(problem) }
        return .success(.tuple([.dictionary(key: "o", value: "a{sv}", entries)]))
    }

    /// `ReadPackedItems`: what ``readItems(_:sessionPath:sender:)`` reads, packed in one byte
    /// array (``PackedItems/unpackRead(_:)``).
    func readPackedItems(_ paths: [String], sessionPath: String, sender: String) -> Result<DBusValue, SecretServiceError> {
        let writer = PackedItems.Writer(sessionPath: sessionPath, capacity: paths.count * 200)
        let problem = read(paths, sessionPath: sessionPath, sender: sender, route: "Import1.ReadPackedItems") { writer.append(read: $0) }
        if let problem { return .failure(problem) }
        return .success(.tuple([.bytes(writer.finish())]))
    }

    /// Reads each item of `paths` that `sender` may see into `body`, as
    /// ``readItems(_:sessionPath:sender:)`` describes, a secret read recorded as read by `route`;
    /// or says why none can be read.
    private func read(
        _ paths: [String], sessionPath: String, sender: String, route: String, _ body: (PackedItems.ReadItem) -> Void
    ) -> SecretServiceError?
    {
        guard paths.count <= Self.readLimit else { return .limitsExceeded("at most \(Self.readLimit) items a call") }
        var session: Session?
        if sessionPath != ObjectPaths.none {
            switch provider.session(at: sessionPath, for: sender) {
            case .failure(let problem): return problem
            case .success(let found): session = found
            }
        }
        for path in paths {
            guard let (item, collection, access) = provider.visibleItem(at: path, for: sender) else { continue }
            var read = PackedItems.ReadItem(
                path: path, isLocked: true, created: item.created, modified: item.modified, label: "", attributes: [:], secret: nil)
            if access == .full, let keys = provider.keyring.opening(item) {
                do {
                    let contents =
                        session == nil
                        ? try provider.keyring.readItem(item, in: collection, keys: keys)
                        : try provider.keyring.readSecret(item, in: collection, keys: keys, route: route)
                    (read.isLocked, read.label, read.attributes) = (false, contents.label, contents.attributes)
                    if let session {
                        switch session.encodedParts(contents) {
                        case .failure(let problem): return problem
                        case .success(let parts): read.secret = parts
                        }
                    }
                } catch {
                    return provider.storeFailure(error)
                }
            }
            body(read)
        }
        return nil
    }
}
