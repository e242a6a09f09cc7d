// secretd's Maintenance1 interface (the store's check and backups), called over GDBus on
// libsecret's connection.

internal import CLibSecret
import DBusValues
import KeychainCore

extension LibSecret {
    /// Calls `method` of secretd's Maintenance1 interface; no timeout of GDBus's own (a check
    /// of a large store takes its time).
    private static func callMaintenance(
        _ service: UnsafeMutablePointer<SecretService>, _ method: String, _ arguments: [DBusValue] = []
    ) throws(KeychainError) -> [DBusValue] {
        try callSecretd(service, SecretServiceNames.Interface.maintenance, method, arguments, feature: "store checks and backups",
                        timeout: Int32.max)
    }

    /// secretd's check of its store.
    static func checkStore() throws(KeychainError) -> KeychainProvider.StoreCheck {
        try withService { service throws(KeychainError) in
            let reply = try callMaintenance(service, "Check")
            guard reply.count == 2, let integrity = reply[0].strings, case .array(_, let rows) = reply[1] else {
                throw .protocolError(reason: "the reply to Check does not have the declared type")
            }
            var keyrings: [KeychainProvider.StoreCheck.Keyring] = []
            for row in rows {
                guard let fields = row.tuple, fields.count == 6, let name = fields[0].string, let label = fields[1].string,
                    let unlocked = fields[2].boolean, let opened = fields[3].uint32, let notChecked = fields[4].uint32,
                    case .array(_, let failed) = fields[5]
                else { throw .protocolError(reason: "the reply to Check does not have the declared type") }
                let failures: [(id: Int64, reason: String)] = failed.compactMap { entry in
                    guard let pair = entry.tuple, pair.count == 2, case .int64(let id) = pair[0], let reason = pair[1].string else { return nil }
                    return (id, reason)
                }
                keyrings.append(.init(
                    name: name, label: label, isUnlocked: unlocked, opened: Int(opened), notChecked: Int(notChecked), failures: failures))
            }
            return .init(integrityProblems: integrity, keyrings: keyrings)
        }
    }

    /// Has secretd write a verified copy of its store to `path`.
    static func backupStore(to path: String, replacing: Bool) throws(KeychainError) -> KeychainProvider.BackupReport {
        try backupCall("Backup", [.string(path), .boolean(replacing)])
    }

    /// Has secretd verify the backup at `path`.
    static func verifyBackup(at path: String) throws(KeychainError) -> KeychainProvider.BackupReport {
        try backupCall("VerifyBackup", [.string(path)])
    }

    /// Calls `method` (`Backup` or `VerifyBackup`) and reads its report.
    private static func backupCall(_ method: String, _ arguments: [DBusValue]) throws(KeychainError) -> KeychainProvider.BackupReport {
        try withService { service throws(KeychainError) in
            let reply = try callMaintenance(service, method, arguments)
            guard reply.count == 4, let keyrings = reply[0].uint32, let verified = reply[1].uint32, let notChecked = reply[2].uint32,
                let bytes = reply[3].uint64
            else { throw .protocolError(reason: "the reply to \(method) does not have the declared type") }
            return .init(keyrings: Int(keyrings), verified: Int(verified), notChecked: Int(notChecked), bytes: bytes)
        }
    }

    /// Has secretd replace its store with the backup at `path`; its check of the backup and
    /// where it kept the data it replaced.
    static func restoreStore(from path: String) throws(KeychainError) -> KeychainProvider.RestoreReport {
        try withService { service throws(KeychainError) in
            let reply = try callMaintenance(service, "Restore", [.string(path)])
            guard reply.count == 5, let keyrings = reply[0].uint32, let verified = reply[1].uint32, let notChecked = reply[2].uint32,
                let bytes = reply[3].uint64, let previous = reply[4].string
            else { throw .protocolError(reason: "the reply to Restore does not have the declared type") }
            return .init(
                backup: .init(keyrings: Int(keyrings), verified: Int(verified), notChecked: Int(notChecked), bytes: bytes),
                previous: previous)
        }
    }

    /// secretd's automatic backups: its settings and the last one.
    static func automaticBackups() throws(KeychainError) -> KeychainProvider.AutomaticBackups {
        try withService { service throws(KeychainError) in
            let reply = try callMaintenance(service, "AutomaticBackups")
            guard reply.count == 6, let directory = reply[0].string, let interval = reply[1].uint64, let keep = reply[2].uint32,
                let last = reply[3].string, case .int64(let time) = reply[4], let failure = reply[5].string
            else { throw .protocolError(reason: "the reply to AutomaticBackups does not have the declared type") }
            return .init(
                directory: directory, interval: Int(clamping: interval), keep: Int(keep), lastFile: last.isEmpty ? nil : last,
                lastTime: last.isEmpty ? nil : time, lastFailure: failure.isEmpty ? nil : failure)
        }
    }
}
