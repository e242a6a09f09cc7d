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

extension Daemon {
    /// The Sync1 interface: each call decoded and handed to ``SyncCoordinator``.
    func handleSync(_ call: MethodCall, reply: @escaping (Result<DBusValue, SecretServiceError>) -> Void) {
        let strings = call.arguments.map(\.string)
        switch call.method {
        case "Init", "Join":
            guard strings.count == 2, let name = strings[0], let remote = strings[1] else { return reply(.failure(.invalidArgs("(ss) expected"))) }
            sync.begin(name: name, remote: remote, joining: call.method == "Join", reply: reply)
        case "Approve":
            guard strings.count == 3, let name = strings[0], let device = strings[1], let code = strings[2] else {
                return reply(.failure(.invalidArgs("(sss) expected")))
            }
            sync.approve(device, code: code, name: name, reply: reply)
        case "Remove":
            guard strings.count == 2, let name = strings[0], let device = strings[1] else { return reply(.failure(.invalidArgs("(ss) expected"))) }
            sync.removeDevice(device, name: name, reply: reply)
        case "Leave":
            guard strings.count == 1, let name = strings[0] else { return reply(.failure(.invalidArgs("(s) expected"))) }
            sync.leave(name: name, reply: reply)
        case "SyncNow":
            guard strings.count == 1, let name = strings[0] else { return reply(.failure(.invalidArgs("(s) expected"))) }
            sync.syncNow(name: name, reply: reply)
        case "GetStatus":
            guard strings.count == 1, let name = strings[0] else { return reply(.failure(.invalidArgs("(s) expected"))) }
            sync.status(name: name, reply: reply)
        case "GetHistory":
            guard call.arguments.count == 2, let name = strings[0], let attributes = call.arguments[1].stringMap else {
                return reply(.failure(.invalidArgs("(sa{ss}) expected")))
            }
            reply(historyTarget(name, attributes, sender: call.sender).flatMap(sync.history))
        case "RestoreVersion":
            guard call.arguments.count == 3, let name = strings[0], let attributes = call.arguments[1].stringMap,
                let entry = call.arguments[2].uint64
            else { return reply(.failure(.invalidArgs("(sa{ss}t) expected"))) }
            reply(historyTarget(name, attributes, sender: call.sender).flatMap { sync.restore(entry, of: $0) })
        default:
            reply(.failure(.noSuchObject("no method \(call.method)")))
        }
    }

    /// The one item of keyring `name` with `attributes` that `sender` may read: alive, or else
    /// deleted here with versions in the history (which are sealed, so each is opened to compare).
    private func historyTarget(_ name: String, _ attributes: [String: String], sender: String) -> Result<SyncCoordinator.HistoryTarget, SecretServiceError> {
        sync.unlockedCollection(named: name).flatMap { collection, itemKeys in
            do {
                let ids = try store.syncIDs(in: collection)
                let live = visible(try searchItems(attributes, in: collection), for: sender).filter { $0.1 == .full }
                guard live.count <= 1 else { return .failure(.invalidArgs("\(live.count) items match; name one item")) }
                if let (item, _) = live.first {
                    return .success(SyncCoordinator.HistoryTarget(collection: collection, itemKeys: itemKeys, syncID: ids[item.id], item: item))
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
                return .success(SyncCoordinator.HistoryTarget(collection: collection, itemKeys: itemKeys, syncID: syncID, item: nil))
            } catch {
                return .failure(storeFailure(error))
            }
        }
    }

}
