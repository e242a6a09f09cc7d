// Sync between a person's machines (secretd's Sync1 interface; `secretctl sync`, `secretctl
// history`). SecretSync holds the format, the merge rule and the git transport; this file
// glues it to the keyring: local changes are stamped when made (Daemon+Signals calls
// ``noteLocalChange(_:in:deleted:)``), rounds run on a thread of their own a few seconds after
// a change and every `sync-interval` seconds, and what arrives is written here on the main
// loop. A locked keyring does not sync; the session keyring, portal app keys and device-only
// items never leave the machine.

import DBusValues
import FoundationEssentials
import Glibc
import KeychainCore
import SecretCrypto
import SecretStore
import SecretSync

extension Daemon {
    /// How long after a local change its round starts, so that a burst of writes is one round.
    static let syncDebounce = 2.0

    /// Whether an item with `attributes` may leave this machine: not device-only, not a portal
    /// app key.
    static func syncs(_ attributes: [String: String]) -> Bool {
        !ItemAccessibility(attributes: attributes).isDeviceOnly
            && !(attributes[PortalNames.schemaAttribute] == PortalNames.schema && attributes[PortalNames.appIDAttribute] != nil)
    }

    // MARK: - Calls

    func handleSync(_ call: MethodCall, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        guard isUnconfinedHostClient(call.sender) else {
            return reply(.failure(.forbidden("only unconfined clients outside a sandbox may manage sync")))
        }
        let strings = call.arguments.map(\.string)
        switch call.method {
        case "Init", "Join":
            guard strings.count == 2, let name = strings[0], let remote = strings[1] else { return reply(.failure(.invalidArgs("(ss) expected"))) }
            begin(name: name, remote: remote, joining: call.method == "Join", reply: reply)
        case "Approve":
            guard strings.count == 3, let name = strings[0], let device = strings[1], let code = strings[2] else {
                return reply(.failure(.invalidArgs("(sss) expected")))
            }
            approve(device, code: code, name: name, reply: reply)
        case "Remove":
            guard strings.count == 2, let name = strings[0], let device = strings[1] else { return reply(.failure(.invalidArgs("(ss) expected"))) }
            removeDevice(device, name: name, reply: reply)
        case "Leave":
            guard strings.count == 1, let name = strings[0] else { return reply(.failure(.invalidArgs("(s) expected"))) }
            leave(name: name, reply: reply)
        case "SyncNow":
            guard strings.count == 1, let name = strings[0] else { return reply(.failure(.invalidArgs("(s) expected"))) }
            switch syncedCollection(named: name) {
            case .failure(let error): reply(.failure(error))
            case .success(let (collection, _)):
                startRound(collection.id) { outcome in
                    reply(outcome.map { outcome in
                        .tuple([.uint32(UInt32(outcome.published)), .uint32(UInt32(outcome.received)), .uint32(UInt32(outcome.conflicts)),
                                .array(element: "s", outcome.refused.map { .string($0) })])
                    })
                }
            }
        case "GetStatus":
            guard strings.count == 1, let name = strings[0] else { return reply(.failure(.invalidArgs("(s) expected"))) }
            status(name: name, reply: reply)
        case "GetHistory":
            guard call.arguments.count == 2, let name = strings[0], let attributes = call.arguments[1].stringMap else {
                return reply(.failure(.invalidArgs("(sa{ss}) expected")))
            }
            reply(historyTarget(name, attributes, sender: call.sender).flatMap(history))
        case "RestoreVersion":
            guard call.arguments.count == 3, let name = strings[0], let attributes = call.arguments[1].stringMap,
                let entry = call.arguments[2].uint64
            else { return reply(.failure(.invalidArgs("(sa{ss}t) expected"))) }
            reply(historyTarget(name, attributes, sender: call.sender).flatMap { restore(entry, of: $0) })
        default:
            reply(.failure(.noSuchObject("no method \(call.method)")))
        }
    }

    /// The collection `name` with its keys, when it is unlocked and may sync.
    private func unlockedCollection(named name: String) -> Result<(Store.CollectionRecord, Store.ItemKeys), SecretServiceError> {
        guard name != Self.sessionName else { return .failure(.invalidArgs("the session keyring never leaves this machine")) }
        guard let collection = try? store.collection(named: name) else { return .failure(.noSuchObject("no keyring \(name)")) }
        guard let itemKeys = keys[collection.id] else { return .failure(.isLocked("the keyring \(name) is locked; unlock it first")) }
        return .success((collection, itemKeys))
    }

    /// The same, for a collection that syncs.
    private func syncedCollection(named name: String) -> Result<(Store.CollectionRecord, Store.SyncSettings), SecretServiceError> {
        unlockedCollection(named: name).flatMap { collection, _ in
            guard let settings = try? store.syncSettings(of: collection) else {
                return .failure(.failed("the keyring \(name) does not sync (secretctl sync init REMOTE, or join REMOTE)"))
            }
            return .success((collection, settings))
        }
    }

    /// Where the clone of `collection`'s remote lives: the data directory's `sync/` (0700).
    private func syncClone(of collection: Store.CollectionRecord, remote: String) -> SyncGit {
        let folder = options.dataDirectory.appendingPathComponent("sync")
        mkdir(folder.path, 0o700)
        return SyncGit(directory: folder.appendingPathComponent(SyncIDs.hex(collection.uuid)), remote: remote, timeout: Self.gitTimeout)
    }

    /// How long one git command may take (SyncGit's timeout).
    private static var gitTimeout: Double {
        #if DEBUG
        if let text = getenv(TestHooks.gitTimeout).map({ String(cString: $0) }), let seconds = Double(text) { return seconds }
        #endif
        return 120
    }

    /// `Init` and `Join`: a new vault on an empty remote, or a request to join the one there.
    private func begin(name: String, remote: String, joining: Bool, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        let collection: Store.CollectionRecord
        switch unlockedCollection(named: name) {
        case .failure(let error): return reply(.failure(error))
        case .success(let (found, _)): collection = found
        }
        if let settings = try? store.syncSettings(of: collection) {
            return reply(.failure(.failed("the keyring \(name) syncs with \(SyncGit.shown(settings.remote)) already (secretctl sync leave first)")))
        }
        guard runs[collection.id] == nil else { return reply(.failure(.failed("the keyring \(name) is starting to sync already"))) }
        let git = syncClone(of: collection, remote: remote)
        try? FileManager.default.removeItem(at: git.directory)
        let identity: SyncIdentity
        do {
            identity = try SyncIdentity.generate()
        } catch {
            return reply(.failure(.failed("cannot make this machine's sync key: \(error)")))
        }
        runs[collection.id] = SyncRuns.Run(clock: HybridLogicalClock(wallClock: SyncRuns.wallClock), running: true)
        let clock = HybridLogicalClock(wallClock: SyncRuns.wallClock)
        offMainLoop({ () -> Result<(SyncVault, String), SyncError> in
            Result { () throws(SyncError) in
                if joining {
                    let (vault, code) = try SyncEngine.join(on: git, identity: identity, clock: clock)
                    return (vault, code)
                }
                return (try SyncEngine.create(on: git, identity: identity, clock: clock), "")
            }
        }) { [weak self] outcome in
            guard let self else { return }
            do {
                let (vault, code) = try outcome.get()
                guard let itemKeys = self.keys[collection.id] else { throw SyncError.transport("the keyring was locked meanwhile; nothing was saved") }
                try self.store.saveSyncState(vault.encoded(), remote: remote, of: collection, keys: itemKeys)
                self.runs[collection.id]!.clock = vault.clock
                self.runs[collection.id]!.vault = vault
                self.released(collection.id)
                // The first machine publishes what it has; a joining one waits for what the vault
                // holds (its items with the same attributes are the same items, see apply).
                let stamped = joining ? 0 : self.stampUnsynced(in: collection, keys: itemKeys)
                let device = SyncIDs.hex(identity.device.id)
                Log.info(joining
                    ? "the keyring \(name) asked to join the vault at \(SyncGit.shown(remote)) as device \(device) (code \(code)); approve it on a machine of the vault"
                    : "the keyring \(name) syncs with \(SyncGit.shown(remote)) from now on, as device \(device); \(stamped) items to publish")
                self.scheduleRound(collection.id, after: 0)
                reply(.success(.tuple([.string(device), .string(code)])))
            } catch {
                self.runs[collection.id] = nil
                Log.warning("the keyring \(name) did not start to sync with \(SyncGit.shown(remote)): \(error)")
                reply(.failure(.failed("\(error)")))
            }
        }
    }

    /// Records as local changes the items of `collection` that may sync and never did (no sync
    /// id, no change waiting): all of them when a keyring starts syncing, and after a joining
    /// machine's first round those the vault did not have; returns how many.
    private func stampUnsynced(in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys) -> Int {
        let ids = (try? store.syncIDs(in: collection)) ?? [:]
        let waiting = Set(((try? store.syncChanges(in: collection)) ?? []).map(\.itemID))
        var count = 0
        for item in (try? store.search([:], in: collection)) ?? [] where ids[item.id] == nil && !waiting.contains(item.id) {
            guard let contents = try? store.readItem(item, in: collection, keys: itemKeys), Self.syncs(contents.attributes) else { continue }
            stamp(item.id, in: collection, deleted: false)
            count += 1
        }
        return count
    }

    /// The local item of `collection` that never synced (no sync id, no change waiting) and has
    /// exactly `attributes`, with its contents: the same item as one with those attributes that
    /// arrives (two machines that had it before they synced).
    private func neverSynced(
        with attributes: [String: String], in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys,
        ids: [Int64: [UInt8]], waiting: Set<Int64>
    ) -> (Store.ItemRecord, ItemContents)? {
        for item in (try? store.search(attributes, in: collection)) ?? [] where ids[item.id] == nil && !waiting.contains(item.id) {
            if let contents = try? store.readItem(item, in: collection, keys: itemKeys), contents.attributes == attributes { return (item, contents) }
        }
        return nil
    }

    /// What an operation on a synced keyring's clone works with, read when its turn comes.
    private struct SyncContext {
        let collection: Store.CollectionRecord
        let settings: Store.SyncSettings
        let vault: SyncVault
        let git: SyncGit
    }

    /// Runs `operation` on keyring `name`'s clone once nothing else uses it (a round, another
    /// call), with what it needs read at that moment; it calls `release` when it is done. What
    /// keeps it from running is replied at once.
    private func onClone(
        of name: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void,
        _ operation: @escaping (SyncContext, _ release: @escaping () -> Void) -> Void
    ) {
        guard case .success(let (collection, _)) = syncedCollection(named: name) else {
            if case .failure(let error) = syncedCollection(named: name) { reply(.failure(error)) }
            return
        }
        exclusively(collection.id) { [weak self] release in
            guard let self else { return }
            switch self.syncedCollection(named: name) {
            case .failure(let error):
                release()
                reply(.failure(error))
            case .success(let (collection, settings)):
                guard let vault = self.openVault(collection) else {
                    release()
                    return reply(.failure(.failed("cannot open the sync state of the keyring \(name)")))
                }
                operation(SyncContext(collection: collection, settings: settings, vault: vault,
                                      git: self.syncClone(of: collection, remote: settings.remote)), release)
            }
        }
    }

    /// Runs `operation` on collection `id`'s clone now if nothing uses it, else after what does;
    /// `operation` calls the closure it is given when it is over.
    private func exclusively(_ id: Int64, _ operation: @escaping (_ release: @escaping () -> Void) -> Void) {
        guard runs[id] != nil else { return operation({}) }
        guard !runs[id]!.running else {
            runs[id]!.queued.append { [weak self] in self?.exclusively(id, operation) }
            return
        }
        runs[id]!.running = true
        operation { [weak self] in self?.released(id) }
    }

    /// The clone of collection `id` is free again: the next queued operation runs, or the round
    /// asked for meanwhile.
    private func released(_ id: Int64) {
        guard runs[id] != nil else { return }
        runs[id]!.running = false
        if !runs[id]!.queued.isEmpty {
            let next = runs[id]!.queued.removeFirst()
            return next()
        }
        if runs[id]!.again || !runs[id]!.waiting.isEmpty { scheduleRound(id, after: 0) }
    }

    /// `Approve`: the waiting device becomes one of the vault's, when `code` is the one it shows.
    private func approve(_ device: String, code: String, name: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        onClone(of: name, reply: reply) { [weak self] context, release in
            let (git, vault) = (context.git, context.vault)
            guard vault.generation > 0 else {
                release()
                return reply(.failure(.failed("this machine is waiting for approval itself")))
            }
            self?.offMainLoop({ () -> Result<Void, SyncError> in
                Result { () throws(SyncError) in
                    guard let waiting = try SyncEngine.pending(on: git, vault: vault).first(where: { SyncIDs.hex($0.device.id) == device }) else {
                        throw .vault("no device \(device) is waiting for approval (secretctl sync status lists them)")
                    }
                    guard waiting.code == code.trimmingWhitespace else {
                        throw .vault("device \(device) shows another code: the request is not from the machine you think; nothing was approved")
                    }
                    try SyncEngine.approve(device, on: git, vault: vault)
                }
            }) { outcome in
                release()
                switch outcome {
                case .success:
                    Log.info("approved device \(device) into the vault of the keyring \(name)")
                    reply(.success(.tuple([])))
                case .failure(let error): reply(.failure(.failed("\(error)")))
                }
            }
        }
    }

    /// `Remove`: the device leaves the vault and the vault key is replaced.
    private func removeDevice(_ device: String, name: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        onClone(of: name, reply: reply) { [weak self] context, release in
            let (git, vault) = (context.git, context.vault)
            guard device != SyncIDs.hex(vault.identity.device.id) else {
                release()
                return reply(.failure(.invalidArgs("that is this machine; remove it from another one, or secretctl sync leave")))
            }
            self?.offMainLoop({ () -> Result<SyncVault, SyncError> in
                Result { () throws(SyncError) in
                    var working = vault
                    try SyncEngine.remove(device, on: git, vault: &working)
                    return working
                }
            }) { [weak self] outcome in
                switch outcome {
                case .success(let updated):
                    self?.keep(updated, of: context.collection, remote: context.settings.remote)
                    Log.info("removed device \(device) from the vault of the keyring \(name); the vault key is now generation \(updated.generation)")
                    reply(.success(.tuple([])))
                case .failure(let error): reply(.failure(.failed("\(error)")))
                }
                release()
            }
        }
    }

    /// `Leave`: the keyring stops syncing here; its items and history stay.
    private func leave(name: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        onClone(of: name, reply: reply) { [weak self] context, _ in
            guard let self else { return }
            let id = context.collection.id
            do {
                try self.store.stopSync(of: context.collection)
            } catch {
                self.released(id)
                return reply(.failure(self.storeFailure(error)))
            }
            // What waited for the clone learns that the keyring no longer syncs.
            let queued = self.runs[id]?.queued ?? []
            self.answerWaiting(id, .failure(.failed("the keyring \(name) no longer syncs")))
            self.runs[id] = nil
            try? FileManager.default.removeItem(at: context.git.directory)
            Log.info("the keyring \(name) no longer syncs")
            reply(.success(.tuple([])))
            for operation in queued { operation() }
        }
    }

    /// `GetStatus`: the remote, this device, the vault's devices and those waiting (read from the
    /// remote now), the last round, the changes not yet published, the conflicts resolved.
    private func status(name: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        onClone(of: name, reply: reply) { [weak self] context, release in
            guard let self else { return }
            let (git, vault, settings) = (context.git, context.vault, context.settings)
            self.offMainLoop({ () -> Result<([SyncDevice], [(device: SyncDevice, code: String)]), SyncError> in
                Result { () throws(SyncError) in try SyncEngine.members(on: git, vault: vault) }
            }) { [weak self] outcome in
                release()
                guard let self else { return }
                var lastError = settings.lastError ?? ""
                var devices: [SyncDevice] = []
                var pending: [(device: SyncDevice, code: String)] = []
                switch outcome {
                case .success(let members): (devices, pending) = members
                case .failure(let error): lastError = "cannot read the remote now: \(error)"
                }
                let me = vault.identity.device
                let unpublished = (try? self.store.syncChanges(in: context.collection).count) ?? 0
                reply(.success(.tuple([
                    .string(SyncGit.shown(settings.remote)), .string(SyncIDs.hex(me.id)), .string(me.code(in: vault.id)), .boolean(vault.generation == 0),
                    .array(element: "s", devices.map { .string(SyncIDs.hex($0.id)) }),
                    .array(element: "(ss)", pending.map { .tuple([.string(SyncIDs.hex($0.device.id)), .string($0.code)]) }),
                    .uint64(settings.lastRound ?? 0), .string(lastError), .uint32(UInt32(unpublished)), .uint32(UInt32(settings.resolved)),
                    .array(element: "s", (self.runs[context.collection.id]?.refused ?? []).map { .string($0) }),
                ])))
            }
        }
    }

    /// The synced item a history call names: alive (`item`), or deleted here, when only the
    /// history holds it.
    private struct HistoryTarget {
        let collection: Store.CollectionRecord
        let itemKeys: Store.ItemKeys
        let syncID: [UInt8]?
        let item: Store.ItemRecord?
    }

    /// The one item of keyring `name` with `attributes` that `sender` may read: alive, or else
    /// deleted here with versions in the history (which are sealed, so each is opened to compare).
    private func historyTarget(_ name: String, _ attributes: [String: String], sender: String) -> Result<HistoryTarget, SecretServiceError> {
        unlockedCollection(named: name).flatMap { collection, itemKeys in
            do {
                let ids = try store.syncIDs(in: collection)
                let live = visible(try searchItems(attributes, in: collection), for: sender).filter { $0.1 == .full }
                guard live.count <= 1 else { return .failure(.invalidArgs("\(live.count) items match; name one item")) }
                if let (item, _) = live.first {
                    return .success(HistoryTarget(collection: collection, itemKeys: itemKeys, syncID: ids[item.id], item: item))
                }
                guard case .success(let caller) = caller(sender) else { return .failure(.forbidden("unknown caller")) }
                let alive = Set(try store.search([:], in: collection).compactMap { ids[$0.id] })
                var deleted: Set<[UInt8]> = []
                for entry in try store.syncHistory(in: collection) where !entry.deleted && !alive.contains(entry.syncID) {
                    guard let plaintext = try store.openSyncHistory(entry, in: collection, keys: itemKeys),
                        let version = try? SyncItem.decode(plaintext),
                        attributes.allSatisfy({ version.contents.attributes[$0.key] == $0.value }),
                        access(caller, to: version.contents.accessGroup) == .full
                    else { continue }
                    deleted.insert(entry.syncID)
                }
                guard deleted.count <= 1 else { return .failure(.invalidArgs("\(deleted.count) deleted items match; name one item")) }
                guard let syncID = deleted.first else { return .failure(.noSuchObject("no such item in the keyring \(name), nor in its history")) }
                return .success(HistoryTarget(collection: collection, itemKeys: itemKeys, syncID: syncID, item: nil))
            } catch {
                return .failure(storeFailure(error))
            }
        }
    }

    /// `GetHistory`: the versions of the item that lost a merge, oldest first: (entry, made at
    /// (ms), device, deleted, label).
    private func history(_ target: HistoryTarget) -> Result<DBusValue, SecretServiceError> {
        do {
            guard let syncID = target.syncID else { return .success(.tuple([.array(element: "(ttsbs)", [])])) }
            let entries = try store.syncHistory(of: syncID, in: target.collection).map { entry throws(StoreError) -> DBusValue in
                var label = ""
                if let plaintext = try store.openSyncHistory(entry, in: target.collection, keys: target.itemKeys) {
                    label = try SyncItem.decode(plaintext).contents.label
                }
                return .tuple([.uint64(UInt64(entry.id)), .uint64(entry.milliseconds), .string(SyncIDs.hex(entry.device)),
                               .boolean(entry.deleted), .string(label)])
            }
            return .success(.tuple([.array(element: "(ttsbs)", entries)]))
        } catch {
            return .failure(storeFailure(error))
        }
    }

    /// `RestoreVersion`: the item takes the contents of its history entry `entry` again (a
    /// deleted one comes back), as a local change, which syncs.
    private func restore(_ entry: UInt64, of target: HistoryTarget) -> Result<DBusValue, SecretServiceError> {
        let (collection, itemKeys) = (target.collection, target.itemKeys)
        do {
            guard let syncID = target.syncID,
                let found = try store.syncHistory(of: syncID, in: collection).first(where: { $0.id == Int64(clamping: entry) })
            else { return .failure(.invalidArgs("the item has no version \(entry) (secretctl history lists them)")) }
            guard let plaintext = try store.openSyncHistory(found, in: collection, keys: itemKeys) else {
                return .failure(.invalidArgs("version \(entry) deleted the item; there is nothing to restore"))
            }
            let contents = try SyncItem.decode(plaintext).contents
            if let item = target.item {
                let updated = try store.updateItem(item, in: collection, keys: itemKeys, contents: contents)
                announceChanged(item, to: updated, label: contents.label, attributes: contents.attributes, in: collection)
            } else {
                let created = try store.createItem(in: collection, keys: itemKeys, contents: contents)
                try store.setSyncID(syncID, ofItem: created.id, in: collection)
                announceCreated(created, in: collection)
            }
            return .success(.tuple([]))
        } catch {
            return .failure(storeFailure(error))
        }
    }

    // MARK: - Local changes

    /// Stamps a local change of `item` (created, changed, or `deleted`) in a synced collection,
    /// when it is made, and schedules a round; versions that arrived from the remote are not
    /// local changes.
    func noteLocalChange(_ item: Store.ItemRecord, in collection: Store.CollectionRecord, deleted: Bool) {
        guard !syncRuns.applyingArrived, runs[collection.id] != nil else { return }
        stamp(item.id, in: collection, deleted: deleted)
        scheduleRound(collection.id, after: Self.syncDebounce)
    }

    /// Records a change of item `itemID`, stamped now by the collection's clock.
    private func stamp(_ itemID: Int64, in collection: Store.CollectionRecord, deleted: Bool) {
        guard var run = runs[collection.id] else { return }
        let stamp = run.clock.tick()
        runs[collection.id] = run
        do {
            try store.noteSyncChange(
                Store.SyncChange(itemID: itemID, milliseconds: stamp.milliseconds, counter: stamp.counter, deleted: deleted), in: collection)
        } catch {
            Log.warning("cannot record a change for sync: \(error)")
        }
    }

    // MARK: - Rounds

    private var runs: [Int64: SyncRuns.Run] {
        get { syncRuns.runs }
        set { syncRuns.runs = newValue }
    }

    /// Loads the synced collections (their clocks after every stamp already made) and starts
    /// the timer of the rounds every `sync-interval` seconds; at start.
    func startSyncing() {
        for settings in (try? store.syncedCollections()) ?? [] {
            guard let collection = try? store.collections().first(where: { $0.id == settings.collectionID }) else { continue }
            var clock = HybridLogicalClock(wallClock: SyncRuns.wallClock)
            for change in (try? store.syncChanges(in: collection)) ?? [] {
                clock.observe(SyncTimestamp(milliseconds: change.milliseconds, counter: change.counter))
            }
            runs[collection.id] = SyncRuns.Run(clock: clock)
            if keys[collection.id] != nil { scheduleRound(collection.id, after: 0) }
        }
        everyInterval()
    }

    private func everyInterval() {
        MainLoop.after(seconds: Double(options.configuration.syncInterval)) { [weak self] in
            guard let self else { return }
            for id in self.runs.keys where self.keys[id] != nil { self.startRound(id, done: nil) }
            self.everyInterval()
        }
    }

    /// Told each lock and unlock: a locked keyring's sync state (its keys) is forgotten, and an
    /// unlocked one syncs soon.
    func syncLockChanged(_ collection: Store.CollectionRecord, locked: Bool) {
        guard runs[collection.id] != nil else { return }
        if locked {
            runs[collection.id]?.vault = nil
        } else {
            scheduleRound(collection.id, after: 0)
        }
    }

    /// A round of `id` in `seconds`, unless another is asked for meanwhile.
    private func scheduleRound(_ id: Int64, after seconds: Double) {
        guard runs[id] != nil else { return }
        runs[id]!.timer += 1
        let token = runs[id]!.timer
        MainLoop.after(seconds: seconds) { [weak self] in
            guard let self, self.runs[id]?.timer == token else { return }
            self.startRound(id, done: nil)
        }
    }

    /// The sync state of `collection`, opened when it is first needed after an unlock.
    private func openVault(_ collection: Store.CollectionRecord) -> SyncVault? {
        if let vault = runs[collection.id]?.vault { return vault }
        guard let itemKeys = keys[collection.id], let state = try? store.syncState(of: collection, keys: itemKeys),
            var vault = try? SyncVault(decoding: state, wallClock: SyncRuns.wallClock)
        else { return nil }
        if runs[collection.id] == nil { runs[collection.id] = SyncRuns.Run(clock: vault.clock) }
        vault.clock.observe(runs[collection.id]!.clock.last)
        runs[collection.id]!.clock.observe(vault.clock.last)
        runs[collection.id]!.vault = vault
        return vault
    }

    /// Starts a round of collection `id` now, unless one is running (then one follows it);
    /// `done` is told what it did.
    private func startRound(_ id: Int64, done: ((Result<SyncRuns.Outcome, SecretServiceError>) -> Void)?) {
        guard runs[id] != nil else { done?(.failure(.failed("the keyring does not sync"))); return }
        if let done { runs[id]!.waiting.append(done) }
        guard !runs[id]!.running else {
            runs[id]!.again = true
            return
        }
        guard let collection = try? store.collections().first(where: { $0.id == id }), let itemKeys = keys[id],
            let settings = try? store.syncSettings(of: collection), var vault = openVault(collection)
        else {
            return answerWaiting(id, .failure(.isLocked("the keyring is locked; it syncs once it is unlocked")))
        }
        // The local changes, as versions.
        let changes = (try? store.syncChanges(in: collection)) ?? []
        var ids = (try? store.syncIDs(in: collection)) ?? [:]
        var versions: [(header: SyncHeader, item: SyncItem?)] = []
        var sent: [Store.SyncChange] = []
        for change in changes {
            let item = try? store.item(id: change.itemID)
            var syncItem: SyncItem?
            if !change.deleted, let item, let contents = try? store.readItem(item, in: collection, keys: itemKeys), Self.syncs(contents.attributes) {
                syncItem = SyncItem(contents: contents, created: item.created, modified: item.modified)
            }
            // Gone, or no longer allowed to leave: a delete marker, if it was ever published.
            if syncItem == nil && ids[change.itemID] == nil {
                try? store.removeSyncChange(change)
                continue
            }
            let syncID = ids[change.itemID] ?? SyncIDs.random()
            if ids[change.itemID] == nil {
                do {
                    try store.setSyncID(syncID, ofItem: change.itemID, in: collection)
                } catch {
                    continue
                }
                ids[change.itemID] = syncID
            }
            let stamp = SyncTimestamp(milliseconds: change.milliseconds, counter: change.counter)
            vault.clock.observe(stamp)
            versions.append((SyncHeader(vault: vault.id, item: syncID, timestamp: stamp, device: vault.identity.device.id,
                                        deleted: syncItem == nil, keyGeneration: vault.generation), syncItem))
            sent.append(change)
        }
        let localByHex = Dictionary(ids.map { (SyncIDs.hex($0.value), $0.key) }, uniquingKeysWith: { first, _ in first })
        runs[id]!.running = true
        runs[id]!.again = false
        let git = syncClone(of: collection, remote: settings.remote)
        let (start, outgoing, daemon) = (vault, versions, UncheckedBox(self))
        offMainLoop({ () -> Result<(SyncVault, SyncEngine.Report), SyncError> in
            var working = start
            return Result { () throws(SyncError) in
                let report = try SyncEngine.round(on: git, vault: &working, changes: outgoing) { header in
                    // A version the remote lost: read again on the main loop, as it is now.
                    MainLoop.onMainLoop { daemon.value.heldVersion(header, localByHex, collection) }
                }
                return (working, report)
            }
        }) { [weak self] outcome in
            guard let self else { return }
            switch outcome {
            case .success(let (updated, report)):
                let result = self.apply(report, updated, sent: sent, localByHex: localByHex, collection: collection, remote: settings.remote)
                self.answerWaiting(id, result)
            case .failure(let error):
                Log.warning("sync of the keyring \(collection.name) failed: \(error); it is tried again later")
                try? self.store.recordSyncRound(of: collection, error: "\(error)", resolved: 0)
                self.answerWaiting(id, .failure(.failed("\(error)")))
            }
            self.released(id)
        }
    }

    private func answerWaiting(_ id: Int64, _ result: Result<SyncRuns.Outcome, SecretServiceError>) {
        let waiting = runs[id]?.waiting ?? []
        runs[id]?.waiting = []
        for done in waiting { done(result) }
    }

    /// The item this machine holds under `header` (its version as it is now), for a file the
    /// remote lost; nil when it changed since (its change goes out in the next round) or is gone.
    private func heldVersion(_ header: SyncHeader, _ localByHex: [String: Int64], _ collection: Store.CollectionRecord) -> SyncItem? {
        guard let itemID = localByHex[header.fileName], let itemKeys = keys[collection.id],
            let item = try? store.item(id: itemID), let contents = try? store.readItem(item, in: collection, keys: itemKeys),
            (try? store.syncChanges(in: collection).contains { $0.itemID == itemID }) == false
        else { return nil }
        return SyncItem(contents: contents, created: item.created, modified: item.modified)
    }

    /// Writes what a round brought: the versions that won, the losers kept as history; then the
    /// changes it published are done, and the new state is kept.
    private func apply(
        _ report: SyncEngine.Report, _ updated: SyncVault, sent: [Store.SyncChange], localByHex: [String: Int64],
        collection: Store.CollectionRecord, remote: String
    ) -> Result<SyncRuns.Outcome, SecretServiceError> {
        guard let itemKeys = keys[collection.id] else { return .failure(.isLocked("the keyring was locked during the round; it syncs again once unlocked")) }
        syncRuns.applyingArrived = true
        defer { syncRuns.applyingArrived = false }
        var outcome = SyncRuns.Outcome(published: report.published, refused: report.refused.map(\.description))
        let sentItems = Set(sent.map(\.itemID))
        let sentChanges = Set(sent)
        let later = ((try? store.syncChanges(in: collection)) ?? []).filter { change in !sentChanges.contains(change) }
        var localByHex = localByHex
        let syncedIDs = (try? store.syncIDs(in: collection)) ?? [:]
        let waitingIDs = Set(((try? store.syncChanges(in: collection)) ?? []).map(\.itemID))
        for (header, arrived) in report.accepted {
            let itemID = localByHex[header.fileName]
            let item = itemID.flatMap { try? store.item(id: $0) }
            // A local change made during the round, later than the arrived version: it stays,
            // and goes out next round; the arrived one is history.
            if let itemID, let change = later.first(where: { $0.itemID == itemID }),
                SyncHeader(vault: header.vault, item: header.item, timestamp: SyncTimestamp(milliseconds: change.milliseconds, counter: change.counter),
                           device: updated.identity.device.id, deleted: change.deleted, keyGeneration: 0).wins(over: header)
            {
                keepHistory(header, arrived, in: collection, keys: itemKeys)
                outcome.conflicts += 1
                continue
            }
            // What this machine had is history: an edit of its own that lost is a conflict.
            if let item, let contents = try? store.readItem(item, in: collection, keys: itemKeys) {
                let previous = report.replacedLocal.first { $0.item == header.item }
                    ?? SyncHeader(vault: header.vault, item: header.item, timestamp: .zero, device: updated.identity.device.id, deleted: false, keyGeneration: 0)
                keepHistory(previous, SyncItem(contents: contents, created: item.created, modified: item.modified), in: collection, keys: itemKeys)
                if sentItems.contains(item.id) { outcome.conflicts += 1 }
            }
            do {
                switch (item, arrived) {
                case (let item?, nil):
                    try store.deleteItem(item, in: collection, keys: itemKeys)
                    announceDeleted(item, in: collection)
                case (let item?, let arrived?):
                    guard Self.checkItemText(label: arrived.contents.label, attributes: arrived.contents.attributes) == nil else { continue }
                    let changed = try store.updateItem(item, in: collection, keys: itemKeys, contents: arrived.contents)
                    announceChanged(item, to: changed, label: arrived.contents.label, attributes: arrived.contents.attributes, in: collection)
                case (nil, let arrived?):
                    guard Self.checkItemText(label: arrived.contents.label, attributes: arrived.contents.attributes) == nil,
                        Self.syncs(arrived.contents.attributes)
                    else { continue }
                    if let (twin, contents) = neverSynced(
                        with: arrived.contents.attributes, in: collection, keys: itemKeys, ids: syncedIDs, waiting: waitingIDs)
                    {
                        try adopt(twin, contents, as: header, arrived, in: collection, keys: itemKeys, outcome: &outcome)
                        localByHex[header.fileName] = twin.id
                        continue
                    }
                    let created = try store.createItem(
                        in: collection, keys: itemKeys, contents: arrived.contents,
                        times: Store.Times(created: arrived.created, modified: arrived.modified))
                    try store.setSyncID(header.item, ofItem: created.id, in: collection)
                    localByHex[header.fileName] = created.id
                    announceCreated(created, in: collection)
                case (nil, nil):
                    break
                }
                outcome.received += 1
            } catch {
                Log.warning("cannot write a version that arrived by sync: \(error)")
            }
        }
        for (header, arrived) in report.lostArrived {
            keepHistory(header, arrived, in: collection, keys: itemKeys)
            outcome.conflicts += 1
        }
        // Published, unless this machine still waits for approval; then what the vault did not
        // have goes out (a joining machine's own items).
        if updated.generation > 0 {
            for change in sent {
                try? store.removeSyncChange(change)
                if change.deleted, (try? store.item(id: change.itemID)) == nil { try? store.forgetSyncID(ofItem: change.itemID) }
            }
            if stampUnsynced(in: collection, keys: itemKeys) > 0 { runs[collection.id]?.again = true }
        }
        // The state is sealed again only when the round changed it (an idle round does not).
        let before = runs[collection.id]?.vault
        if report.published > 0 || !report.accepted.isEmpty || !report.lostArrived.isEmpty || before?.keys.count != updated.keys.count {
            keep(updated, of: collection, remote: remote)
        } else {
            runs[collection.id]?.vault?.clock.observe(updated.clock.last)
            runs[collection.id]?.clock.observe(updated.clock.last)
        }
        runs[collection.id]?.refused = outcome.refused
        for refusal in outcome.refused { Log.warning("sync of the keyring \(collection.name) refused a file: \(refusal)") }
        try? store.recordSyncRound(of: collection, error: nil, resolved: outcome.conflicts)
        if outcome.published + outcome.received + outcome.conflicts > 0 {
            Log.info("synced the keyring \(collection.name): \(outcome.published) out, \(outcome.received) in, \(outcome.conflicts) conflicts resolved")
        }
        return .success(outcome)
    }

    /// Makes the local item `twin`, which never synced, the arrived item `header` (they have the
    /// same attributes): the later of the two (the local one by its modified time) is its
    /// version, the other its history; the local one, if it wins, goes out as a change.
    private func adopt(
        _ twin: Store.ItemRecord, _ contents: ItemContents, as header: SyncHeader, _ arrived: SyncItem,
        in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys, outcome: inout SyncRuns.Outcome
    ) throws(StoreError) {
        try store.setSyncID(header.item, ofItem: twin.id, in: collection)
        let same = contents.label == arrived.contents.label && contents.contentType == arrived.contents.contentType
            && contents.secret.constantTimeEquals(arrived.contents.secret)
        guard !same else { return }
        outcome.conflicts += 1
        let localTime = SyncTimestamp(milliseconds: twin.modified * 1000)
        if localTime > header.timestamp {
            keepHistory(header, arrived, in: collection, keys: itemKeys)
            stamp(twin.id, in: collection, deleted: false)
            runs[collection.id]?.again = true
        } else {
            var own = header
            own.timestamp = localTime
            own.device = runs[collection.id]?.vault?.identity.device.id ?? header.device
            keepHistory(own, SyncItem(contents: contents, created: twin.created, modified: twin.modified), in: collection, keys: itemKeys)
            let changed = try store.updateItem(twin, in: collection, keys: itemKeys, contents: arrived.contents)
            announceChanged(twin, to: changed, label: arrived.contents.label, attributes: arrived.contents.attributes, in: collection)
            outcome.received += 1
        }
    }

    /// Keeps a version that lost as the item's history.
    private func keepHistory(_ header: SyncHeader, _ item: SyncItem?, in collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys) {
        do {
            try store.addSyncHistory(
                syncID: header.item, milliseconds: header.timestamp.milliseconds, counter: header.timestamp.counter, device: header.device,
                plaintext: item?.encoded(), in: collection, keys: itemKeys)
        } catch {
            Log.warning("cannot keep a version in the history: \(error)")
        }
    }

    /// Keeps `vault` as `collection`'s sync state, in memory and sealed in the store.
    private func keep(_ vault: SyncVault, of collection: Store.CollectionRecord, remote: String) {
        var vault = vault
        if let clock = runs[collection.id]?.clock { vault.clock.observe(clock.last) }
        runs[collection.id]?.clock.observe(vault.clock.last)
        runs[collection.id]?.vault = vault
        guard let itemKeys = keys[collection.id] else { return }
        do {
            try store.saveSyncState(vault.encoded(), remote: remote, of: collection, keys: itemKeys)
        } catch {
            Log.warning("cannot save the sync state of the keyring \(collection.name): \(error)")
        }
    }

    /// Runs `work` on a thread of its own (git talks to the network) and gives its result to
    /// `done` on the main loop.
    private func offMainLoop<T>(_ work: @escaping @Sendable () -> T, done: @escaping (T) -> Void) {
        let box = UncheckedBox(done)
        let started = DetachedThread.start(named: "secretd-sync") {
            let value = UncheckedBox(work())
            MainLoop.onMainLoop { box.value(value.value) }
        }
        if !started { Log.error("cannot start the sync thread") }
    }
}

/// A value handed between the main loop and a sync thread, which never touch it at once.
private final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
