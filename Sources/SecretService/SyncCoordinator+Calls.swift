// Sync's operations on a keyring, as the Sync1 interface asks for them (SyncObject decodes the
// calls and decides what a caller may name): start or join a vault, approve and remove
// devices, leave, the status, a round now, the history of an item and a restore.

import DBusValues
import FoundationEssentials
import Glibc
import KeychainCore
import SecretCrypto
import SecretStore
import SecretSync

extension SyncCoordinator {
    /// Whether an item with `attributes` may leave this machine: not device-only, not a portal
    /// app key.
    static func syncs(_ attributes: [String: String]) -> Bool {
        !ItemAccessibility(attributes: attributes).isDeviceOnly
            && !(attributes[PortalNames.schemaAttribute] == PortalNames.schema && attributes[PortalNames.appIDAttribute] != nil)
    }

    /// The collection `name` with its keys, when it is unlocked and may sync.
    func unlockedCollection(named name: String) -> Result<(Store.CollectionRecord, Store.ItemKeys), SecretServiceError> {
        guard name != SecretServiceNames.sessionCollection else { return .failure(.invalidArgs("the session keyring never leaves this machine")) }
        guard let collection = try? store.collection(named: name) else { return .failure(.noSuchObject("no keyring \(name)")) }
        guard let itemKeys = keyring[collection.id] else { return .failure(.isLocked("the keyring \(name) is locked; unlock it first")) }
        return .success((collection, itemKeys))
    }

    /// The same, for a collection that syncs.
    func syncedCollection(named name: String) -> Result<(Store.CollectionRecord, Store.SyncSettings), SecretServiceError> {
        unlockedCollection(named: name).flatMap { collection, _ in
            guard let settings = try? store.syncSettings(of: collection) else {
                return .failure(.failed("the keyring \(name) does not sync (secretctl sync init REMOTE, or join REMOTE)"))
            }
            return .success((collection, settings))
        }
    }

    /// Where the clone of `collection`'s remote lives: the data directory's `sync/` (0700).
    func syncClone(of collection: Store.CollectionRecord, remote: String) -> SyncGit {
        let folder = dataDirectory.appendingPathComponent("sync")
        mkdir(folder.path, 0o700)
        return SyncGit(directory: folder.appendingPathComponent(SyncIDs.hex(collection.uuid)), remote: remote, timeout: Self.gitTimeout)
    }

    /// How long one git command may take (SyncGit's timeout).
    static var gitTimeout: Double {
        #if DEBUG
        if let text = getenv(TestHooks.gitTimeout).map({ String(cString: $0) }), let seconds = Double(text) { return seconds }
        #endif
        return 120
    }

    /// `Init` and `Join`: a new vault on an empty remote, or a request to join the one there.
    func begin(name: String, remote: String, joining: Bool, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
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
        runs[collection.id] = Run(clock: HybridLogicalClock(wallClock: Self.wallClock), running: true)
        let clock = HybridLogicalClock(wallClock: Self.wallClock)
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
                guard self.runs[collection.id] != nil else { throw SyncError.transport("the keyring was deleted meanwhile") }
                guard let itemKeys = self.keyring[collection.id] else { throw SyncError.transport("the keyring was locked meanwhile; nothing was saved") }
                try self.store.saveSyncState(vault.encoded(), remote: remote, of: collection, keys: itemKeys)
                self.runs[collection.id]?.clock = vault.clock
                self.runs[collection.id]?.vault = vault
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

    /// `Approve`: the waiting device becomes one of the vault's, when `code` is the one it shows.
    func approve(_ device: String, code: String, name: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
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
    func removeDevice(_ device: String, name: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
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
    func leave(name: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        onClone(of: name, reply: reply) { [weak self] context, _ in
            guard let self else { return }
            let id = context.collection.id
            do throws(StoreError) {
                try self.store.stopSync(of: context.collection)
            } catch {
                self.released(id)
                return reply(.failure(SecretServiceError(storeFailure: error)))
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
    func status(name: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
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
    struct HistoryTarget {
        let collection: Store.CollectionRecord
        let itemKeys: Store.ItemKeys
        let syncID: [UInt8]?
        let item: Store.ItemRecord?
    }

    /// `GetHistory`: the versions of the item that lost a merge, oldest first: (entry, made at
    /// (ms), device, deleted, label).
    func history(_ target: HistoryTarget) -> Result<DBusValue, SecretServiceError> {
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
            return .failure(SecretServiceError(storeFailure: error))
        }
    }

    /// `RestoreVersion`: the item takes the contents of its history entry `entry` again (a
    /// deleted one comes back), as a local change, which syncs.
    func restore(_ entry: UInt64, of target: HistoryTarget) -> Result<DBusValue, SecretServiceError> {
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
                _ = try keyring.updateItem(item, in: collection, keys: itemKeys, contents: contents)
            } else {
                let created = try keyring.createItem(in: collection, keys: itemKeys, contents: contents)
                try store.setSyncID(syncID, ofItem: created.id, in: collection)
            }
            return .success(.tuple([]))
        } catch {
            return .failure(SecretServiceError(storeFailure: error))
        }
    }

    /// `SyncNow`: a round now (after the running one), answered with what it did.
    func syncNow(name: String, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
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
    }
}
