// secretd's Sync1 interface (sync between a person's machines), called over GDBus on
// libsecret's connection. No secret crosses it: versions are restored inside secretd.

internal import CLibSecret
import DBusValues
import KeychainCore

extension LibSecret {
    /// How long a sync call may take (milliseconds): secretd answers once git is done, and
    /// stops a git command after 120 s (ssh gives up on a silent host sooner), so the answer
    /// comes well before this; GDBus's 25 s would give up on a slow remote first.
    private static let syncCallTimeout: Int32 = 300_000

    /// Calls `method` of secretd's Sync1 interface.
    static func callSync(_ method: String, _ arguments: [DBusValue]) throws(KeychainError) -> [DBusValue] {
        try withService { service throws(KeychainError) in
            try callSecretd(
                service, SecretServiceNames.Interface.sync, method, arguments, feature: "sync between machines", timeout: syncCallTimeout)
        }
    }

    /// The reply to `method`, checked against the types it must have.
    static func syncReply(_ method: String, _ arguments: [DBusValue], count: Int) throws(KeychainError) -> [DBusValue] {
        let reply = try callSync(method, arguments)
        guard reply.count == count else { throw .protocolError(reason: "the reply to \(method) does not have the declared type") }
        return reply
    }

    /// Starts syncing `keyring` through `remote` (a new vault there, or a request to join the
    /// one there when `joining`); returns this machine's device id and, when joining, its code.
    static func startSync(keyring: String, remote: String, joining: Bool) throws(KeychainError) -> (device: String, code: String) {
        let reply = try syncReply(joining ? "Join" : "Init", [.string(keyring), .string(remote)], count: 2)
        guard let device = reply[0].string, let code = reply[1].string else { throw .protocolError(reason: "the reply to Init does not have the declared type") }
        return (device, code)
    }

    /// Runs a round now and waits for it.
    static func syncNow(keyring: String) throws(KeychainError) -> KeychainProvider.SyncRound {
        let reply = try syncReply("SyncNow", [.string(keyring)], count: 4)
        guard let published = reply[0].uint32, let received = reply[1].uint32, let conflicts = reply[2].uint32,
            case .array(_, let refused) = reply[3]
        else { throw .protocolError(reason: "the reply to SyncNow does not have the declared type") }
        return KeychainProvider.SyncRound(published: Int(published), received: Int(received), conflicts: Int(conflicts), refused: refused.compactMap(\.string))
    }

    /// The sync state of `keyring`.
    static func syncStatus(keyring: String) throws(KeychainError) -> KeychainProvider.SyncStatus {
        let reply = try syncReply("GetStatus", [.string(keyring)], count: 11)
        guard let remote = reply[0].string, let device = reply[1].string, let code = reply[2].string, let waiting = reply[3].boolean,
            case .array(_, let devices) = reply[4], case .array(_, let pending) = reply[5], let lastSync = reply[6].uint64,
            let lastError = reply[7].string, let unpublished = reply[8].uint32, let resolved = reply[9].uint32,
            case .array(_, let refused) = reply[10]
        else { throw .protocolError(reason: "the reply to GetStatus does not have the declared type") }
        let waitingDevices: [(device: String, code: String)] = pending.compactMap { entry in
            guard case .tuple(let fields) = entry, fields.count == 2, let id = fields[0].string, let code = fields[1].string else { return nil }
            return (id, code)
        }
        return KeychainProvider.SyncStatus(
            remote: remote, device: device, code: code, waiting: waiting, devices: devices.compactMap(\.string), pending: waitingDevices,
            lastSync: lastSync, lastError: lastError, unpublished: Int(unpublished), conflictsResolved: Int(resolved),
            refused: refused.compactMap(\.string))
    }

    /// The history of the one item of `keyring` with `attributes`, oldest first.
    static func syncHistory(keyring: String, attributes: [String: String]) throws(KeychainError) -> [KeychainProvider.SyncVersion] {
        let reply = try syncReply("GetHistory", [.string(keyring), .stringMap(attributes)], count: 1)
        guard case .array(_, let entries) = reply[0] else { throw .protocolError(reason: "the reply to GetHistory does not have the declared type") }
        return entries.compactMap { entry in
            guard case .tuple(let fields) = entry, fields.count == 5, let id = fields[0].uint64, let madeAt = fields[1].uint64,
                let device = fields[2].string, let deleted = fields[3].boolean, let label = fields[4].string
            else { return nil }
            return KeychainProvider.SyncVersion(id: id, madeAt: madeAt, device: device, deleted: deleted, label: label)
        }
    }

    /// Approves waiting device `device`, whose screen shows `code`.
    static func approveSyncDevice(_ device: String, code: String, keyring: String) throws(KeychainError) {
        _ = try callSync("Approve", [.string(keyring), .string(device), .string(code)])
    }

    /// Removes `device` from the vault (and replaces the vault key).
    static func removeSyncDevice(_ device: String, keyring: String) throws(KeychainError) {
        _ = try callSync("Remove", [.string(keyring), .string(device)])
    }

    /// Stops syncing `keyring` on this machine.
    static func leaveSync(keyring: String) throws(KeychainError) {
        _ = try callSync("Leave", [.string(keyring)])
    }

    /// Makes version `version` of the history the item's contents again.
    static func restoreSyncVersion(_ version: UInt64, keyring: String, attributes: [String: String]) throws(KeychainError) {
        _ = try callSync("RestoreVersion", [.string(keyring), .stringMap(attributes), .uint64(version)])
    }
}
