// io.github.secretd.Sync1
//
// Sync between a person's machines: secretd's Sync1 interface (`secretctl sync`, `secretctl
// history`). SecretSync holds the format, the merge rule and the git transport; SyncCoordinator
// glues it to the keyring. This file decodes the calls and decides which item a history call
// may name. A locked keyring does not sync; the session keyring, portal app keys and
// device-only items never leave the machine.

import DBusValues
import FoundationEssentials
import Glibc
import KeychainCore
import SecretCrypto
import SecretStore
import SecretSync

extension Introspection {
    /// secretd's own: sync between a person's machines, each call handed to ``SyncCoordinator``.
    static let syncInterface = BusInterface(name: sync, objects: .service, methods: [
        Method(name: "Init", rule: .unconfined, arguments: [Argument(name: "collection", type: "s"), Argument(name: "remote", type: "s")],
               results: [Argument(name: "device", type: "s"), Argument(name: "code", type: "s")],
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   provider.sync.begin(name: try call.argument(0), remote: try call.argument(1), joining: false, reply: reply)
               }),
        Method(name: "Join", rule: .unconfined, arguments: [Argument(name: "collection", type: "s"), Argument(name: "remote", type: "s")],
               results: [Argument(name: "device", type: "s"), Argument(name: "code", type: "s")],
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   provider.sync.begin(name: try call.argument(0), remote: try call.argument(1), joining: true, reply: reply)
               }),
        Method(name: "Approve", rule: .unconfined, arguments: [
            Argument(name: "collection", type: "s"), Argument(name: "device", type: "s"), Argument(name: "code", type: "s"),
        ], handler: .later { provider, call, reply throws(SecretServiceError) in
            provider.sync.approve(try call.argument(1), code: try call.argument(2), name: try call.argument(0), reply: reply)
        }),
        Method(name: "Remove", rule: .unconfined, arguments: [Argument(name: "collection", type: "s"), Argument(name: "device", type: "s")],
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   provider.sync.removeDevice(try call.argument(1), name: try call.argument(0), reply: reply)
               }),
        Method(name: "Leave", rule: .unconfined, arguments: [Argument(name: "collection", type: "s")],
               handler: .later { provider, call, reply throws(SecretServiceError) in provider.sync.leave(name: try call.argument(0), reply: reply) }),
        Method(name: "SyncNow", rule: .unconfined, arguments: [Argument(name: "collection", type: "s")], results: [
            Argument(name: "published", type: "u"), Argument(name: "received", type: "u"), Argument(name: "conflicts", type: "u"),
            Argument(name: "refused", type: "as"),
        ], handler: .later { provider, call, reply throws(SecretServiceError) in provider.sync.syncNow(name: try call.argument(0), reply: reply) }),
        Method(name: "GetStatus", rule: .unconfined, arguments: [Argument(name: "collection", type: "s")], results: [
            Argument(name: "remote", type: "s"), Argument(name: "device", type: "s"), Argument(name: "code", type: "s"),
            Argument(name: "waiting", type: "b"), Argument(name: "devices", type: "as"), Argument(name: "pending", type: "a(ss)"),
            Argument(name: "last_sync", type: "t"), Argument(name: "last_error", type: "s"), Argument(name: "unpublished", type: "u"),
            Argument(name: "conflicts_resolved", type: "u"), Argument(name: "refused", type: "as"),
        ], handler: .later { provider, call, reply throws(SecretServiceError) in provider.sync.status(name: try call.argument(0), reply: reply) }),
        Method(name: "GetHistory", rule: .unconfined, arguments: [Argument(name: "collection", type: "s"), Argument(name: "attributes", type: "a{ss}")],
               results: [Argument(name: "versions", type: "a(ttsbs)")],
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   let target = try SyncObject(provider).historyTarget(call.argument(0), call.argument(1), sender: call.sender).get()
                   reply(provider.sync.history(target))
               }),
        Method(name: "RestoreVersion", rule: .unconfined, arguments: [
            Argument(name: "collection", type: "s"), Argument(name: "attributes", type: "a{ss}"), Argument(name: "version", type: "t"),
        ], handler: .later { provider, call, reply throws(SecretServiceError) in
            let target = try SyncObject(provider).historyTarget(call.argument(0), call.argument(1), sender: call.sender).get()
            reply(provider.sync.restore(try call.argument(2), of: target))
        }),
    ])
}

/// secretd's Sync1 interface: what `secretctl sync` asks of the SyncCoordinator, decoded.
struct SyncObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// The one item of keyring `name` with `attributes` that `sender` may read: alive, or else
    /// deleted here with versions in the history (which are sealed, so each is opened to compare).
    fileprivate func historyTarget(_ name: String, _ attributes: [String: String], sender: String) -> Result<SyncCoordinator.HistoryTarget, SecretServiceError> {
        provider.sync.unlockedCollection(named: name).flatMap { collection, itemKeys in
            do {
                let ids = try provider.sync.store.syncIDs(in: collection)
                let live = provider.visible(try provider.searchItems(attributes, in: collection), for: sender).filter { $0.1 == .full }
                guard live.count <= 1 else { return .failure(.invalidArgs("\(live.count) items match; name one item")) }
                if let (item, _) = live.first {
                    return .success(SyncCoordinator.HistoryTarget(collection: collection, itemKeys: itemKeys, syncID: ids[item.id], item: item))
                }
                guard case .success(let caller) = provider.caller(sender) else { return .failure(.forbidden("unknown caller")) }
                let alive = Set(try provider.keyring.search([:], in: collection).compactMap { ids[$0.id] })
                var deleted: Set<[UInt8]> = []
                for entry in try provider.sync.store.syncHistory(in: collection) where !entry.deleted && !alive.contains(entry.syncID) {
                    guard let plaintext = try provider.sync.store.openSyncHistory(entry, in: collection, keys: itemKeys),
                        let version = try? SyncItem.decode(plaintext),
                        attributes.allSatisfy({ version.contents.attributes[$0.key] == $0.value }),
                        provider.access(caller, to: version.contents.accessGroup) == .full
                    else { continue }
                    deleted.insert(entry.syncID)
                }
                guard deleted.count <= 1 else { return .failure(.invalidArgs("\(deleted.count) deleted items match; name one item")) }
                guard let syncID = deleted.first else { return .failure(.noSuchObject("no such item in the keyring \(name), nor in its history")) }
                return .success(SyncCoordinator.HistoryTarget(collection: collection, itemKeys: itemKeys, syncID: syncID, item: nil))
            } catch {
                return .failure(provider.storeFailure(error))
            }
        }
    }
}

