// Who hears about what: every signal that names an item or carries its properties goes, unicast,
// only to the clients that may see the item; signals about collections are broadcast. The
// Announcer follows the keyring's events (KeyringEvent); no handler sends a signal itself.

import KeychainCore
import SecretStore
import DBusValues

/// Who hears what about one change to an item.
///
/// Only identified callers (``Provider/callers``: clients that have called secretd) that watch
/// items (``Caller/watchesItems``) hear anything, each by signals sent to it alone, and only
/// about an item it may see: in full if
/// it belongs to the item's group, as a locked item (its path and times, no label or
/// attributes) if the group is an `ask` group it is not allowed into. A change that moves an
/// item between groups is different news to each side: clients that see the item before and
/// after hear that it changed, those that lose sight of it that it was deleted, and those that
/// gain sight of it that it was created.
struct SignalAudience: Equatable {
    /// What a client hears.
    enum News: Equatable {
        /// `ItemCreated`, and the collection's `Items` as the client may see them.
        case created
        /// `ItemChanged`, and the item's `PropertiesChanged` with what it may read of them.
        case changed
        /// `ItemDeleted`, and the collection's `Items` as the client may see them.
        case deleted
    }

    /// One client told about the change.
    struct Listener: Equatable {
        /// Its unique bus name.
        var name: String
        /// What it hears.
        var news: News
        /// What it may see of the item: after the change, or before it for `deleted`.
        var access: ItemAccess
        /// Whether the item went from `full` to `askable` for it or back, so that its `Locked`
        /// changed.
        var accessChanged: Bool
    }

    /// The clients told, in name order.
    var listeners: [Listener]

    /// The audience of a change, from what each client could see of the item before it and can
    /// see after it; a client missing from a side does not see the item there.
    init(before: [String: ItemAccess], after: [String: ItemAccess]) {
        listeners = Set(before.keys).union(after.keys).sorted().compactMap { name in
            switch (before[name], after[name]) {
            case (let old?, let new?): return Listener(name: name, news: .changed, access: new, accessChanged: old != new)
            case (let old?, nil): return Listener(name: name, news: .deleted, access: old, accessChanged: false)
            case (nil, let new?): return Listener(name: name, news: .created, access: new, accessChanged: false)
            case (nil, nil): return nil
            }
        }
    }
}

/// Tells the clients what changed in the keyring: each ``KeyringEvent`` becomes the signals
/// the clients that may see it hear (``SignalAudience``), and the collections' `Items` go out
/// on the ``ItemsSchedule``.
final class Announcer {
    /// Whose clients hear (unowned: the provider's keyring holds the announcer).
    private unowned let provider: Provider
    /// When each collection's `Items` goes out to its watchers.
    let itemsSchedule = ItemsSchedule()

    /// An announcer for `provider`'s clients; ``Provider/serve(on:)`` subscribes it to the keyring.
    init(provider: Provider) { self.provider = provider }

    /// Tells the clients about one change to the keyring.
    func follow(_ event: KeyringEvent) {
        switch event {
        case .itemCreated(let item, let collection, _, _):
            announceCreated(item, in: collection)
        case .itemChanged(let before, let after, let label, let attributes, let collection):
            announceChanged(before, to: after, label: label, attributes: attributes, in: collection)
        case .itemDeleted(let item, let collection, _, _):
            announceDeleted(item, in: collection)
        case .collectionCreated(let collection):
            announceCollection(collection, signal: "CollectionCreated")
        case .collectionRelabelled(let collection, let label):
            broadcastProperties(["Label": .string(label)], of: collection)
            provider.server.emitSignal(path: ObjectPaths.service, interface: Introspection.service, name: "CollectionChanged",
                              arguments: [.objectPath(ObjectPaths.collection(collection.name))])
        case .collectionDeleted(let collection):
            itemsSchedule.forget(collection.id)
            announceCollection(collection, signal: "CollectionDeleted")
        case .unlocked(let collection):
            broadcastProperties(["Locked": .boolean(false)], of: collection)
        case .locked(let collection):
            broadcastProperties(["Locked": .boolean(true)], of: collection)
        case .secretRead, .refused:
            break
        case .restored(let appeared):
            announceRestored(appeared: appeared)
        }
    }

    /// Tells the clients about a store replaced by a backup: `CollectionCreated` for each
    /// collection that appeared, the service's `Collections`, and every collection's `Items` to
    /// the clients that watch them (its items may all have changed).
    private func announceRestored(appeared: [Store.CollectionRecord]) {
        for collection in appeared {
            provider.server.emitSignal(
                path: ObjectPaths.service, interface: Introspection.service, name: "CollectionCreated",
                arguments: [.objectPath(ObjectPaths.collection(collection.name))])
        }
        broadcastCollections()
        let watchers = Set(provider.callers.byName.filter { $0.value.watchesItems }.map(\.key))
        for collection in (try? provider.keyring.collections()) ?? [] {
            itemsSchedule.forget(collection.id)
            sendItems(of: collection, to: watchers)
        }
    }

    /// Announces a collection created or deleted (`signal`), then the service's `Collections`.
    private func announceCollection(_ collection: Store.CollectionRecord, signal: String) {
        provider.server.emitSignal(
            path: ObjectPaths.service, interface: Introspection.service, name: signal,
            arguments: [.objectPath(ObjectPaths.collection(collection.name))])
        broadcastCollections()
    }

    // MARK: - Items

    /// What each caller that watches items may see of an item of `group` (nil: `default`),
    /// for the callers that may see it at all. Clients that never called secretd are not among
    /// them (secretd cannot tell who they are), nor are those that never read a collection's
    /// or an item's properties (``Caller/watchesItems``).
    func sight(ofGroup group: String?) -> [String: ItemAccess] {
        var sight: [String: ItemAccess] = [:]
        for (name, caller) in provider.callers.byName where caller.watchesItems {
            let access = provider.access(caller, to: group)
            if access != .hidden { sight[name] = access }
        }
        return sight
    }

    /// Tells the clients that may see `item`, just created, about it.
    func announceCreated(_ item: Store.ItemRecord, in collection: Store.CollectionRecord) {
        tell(SignalAudience(before: [:], after: sight(ofGroup: item.accessGroup)), about: item, in: collection, properties: [:])
    }

    /// Tells the clients that could see `item`, just deleted, that it is gone.
    func announceDeleted(_ item: Store.ItemRecord, in collection: Store.CollectionRecord) {
        tell(SignalAudience(before: sight(ofGroup: item.accessGroup), after: [:]), about: item, in: collection, properties: [:])
    }

    /// Tells the clients that may see the item, `before` and `updated` (its record before the
    /// change and after it), what changed; `label` and `attributes` are its new ones.
    func announceChanged(
        _ before: Store.ItemRecord, to updated: Store.ItemRecord, label: String, attributes: [String: String],
        in collection: Store.CollectionRecord
    ) {
        let audience = SignalAudience(before: sight(ofGroup: before.accessGroup), after: sight(ofGroup: updated.accessGroup))
        tell(audience, about: updated, in: collection, properties: [
            "Label": .string(label), "Attributes": .stringMap(attributes), "Modified": .uint64(updated.modified),
        ])
    }

    /// Sends each listener of `audience` its news about `item`; `properties` are the item's
    /// changed properties, of which a client that sees the item locked gets only `Modified`.
    private func tell(
        _ audience: SignalAudience, about item: Store.ItemRecord, in collection: Store.CollectionRecord,
        properties: [String: DBusValue]
    ) {
        let path = ObjectPaths.item(collection.name, item.id)
        let collectionPath = ObjectPaths.collection(collection.name)
        var itemsChangedFor: Set<String> = []
        for listener in audience.listeners {
            let signal: String
            switch listener.news {
            case .created: signal = "ItemCreated"
            case .changed: signal = "ItemChanged"
            case .deleted: signal = "ItemDeleted"
            }
            provider.server.emitSignal(path: collectionPath, interface: Introspection.collection, name: signal,
                              arguments: [.objectPath(path)], destination: listener.name)
            guard listener.news == .changed else {
                itemsChangedFor.insert(listener.name)
                continue
            }
            // What the item's properties show this client: an item it sees locked has no label or attributes.
            var changed = listener.access == .full ? properties : properties.filter { $0.key == "Modified" }
            if listener.accessChanged { changed["Locked"] = .boolean(listener.access != .full) }
            if changed.isEmpty { continue }
            provider.server.emitPropertiesChanged(path: path, interface: Introspection.item, changed: changed, destination: listener.name)
        }
        sendItems(of: collection, to: itemsChangedFor)
    }

    /// Sends `names` the collection's `Items` as each may see them (``Provider/visibleItemPaths(of:for:)``),
    /// after the `ItemCreated` or `ItemDeleted` that changed them: at once, or gathered with
    /// the next writes' (``ItemsSchedule``). With the value, not as invalidated: libsecret's
    /// collection objects (Seahorse, every client that lists items) load their items from the
    /// proxy's cached `Items`, which an invalidation empties, so they would never show the new
    /// item (nor a later one).
    private func sendItems(of collection: Store.CollectionRecord, to names: Set<String>) {
        let (now, later) = itemsSchedule.request(collection.id, for: names)
        for name in now.sorted() { sendItems(of: collection, to: name) }
        guard let later else { return }
        let id = collection.id
        MainLoop.after(seconds: later) { [weak self] in
            guard let self else { return }
            let names = itemsSchedule.takeWaiting(id)
            guard let current = ((try? provider.keyring.collections()) ?? []).first(where: { $0.id == id }) else { return }
            for name in names.sorted() where provider.callers[name]?.watchesItems == true { sendItems(of: current, to: name) }
        }
    }

    /// Sends `name` the collection's `Items` now.
    private func sendItems(of collection: Store.CollectionRecord, to name: String) {
        guard let items = try? provider.visibleItemPaths(of: collection, for: name) else { return }
        provider.server.emitPropertiesChanged(
            path: ObjectPaths.collection(collection.name), interface: Introspection.collection, changed: ["Items": .objectPaths(items)],
            destination: name)
    }

    // MARK: - Collections

    /// Broadcasts new values of a collection's own properties (its `Label`; `Locked` is
    /// announced from the keyring's events too). Collections are not in access groups: every client may
    /// list them and read these, so their signals (these, `CollectionCreated`,
    /// `CollectionChanged`, `CollectionDeleted`) tell nobody anything it could not read, and go
    /// to every listener, as clients that only listen (a tray icon, a lock indicator) expect.
    func broadcastProperties(_ changed: [String: DBusValue], of collection: Store.CollectionRecord) {
        provider.server.emitPropertiesChanged(path: ObjectPaths.collection(collection.name), interface: Introspection.collection,
                                     changed: changed)
    }

    /// Broadcasts the service's `Collections` with its value (collections are everyone's to
    /// list): libsecret's service object (Seahorse's list of keyrings) loads its collections
    /// from the proxy's cached `Collections`, which neither `CollectionCreated` nor an
    /// invalidation updates.
    private func broadcastCollections() {
        provider.server.emitPropertiesChanged(
            path: ObjectPaths.service, interface: Introspection.service, changed: ["Collections": .objectPaths(provider.collectionPaths())])
    }
}
