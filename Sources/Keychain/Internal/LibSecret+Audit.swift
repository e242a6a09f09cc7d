// secretd's Audit1 interface (the audit trail), called over GDBus on libsecret's connection.

internal import CLibSecret
import DBusValues
import KeychainCore

extension LibSecret {
    /// secretd's audit trail from `since` (milliseconds since 1970) on.
    static func readAudit(since: Int64) throws(KeychainError) -> KeychainProvider.AuditReading {
        try withService { service throws(KeychainError) in
            let reply = try callSecretd(
                service, SecretServiceNames.Interface.audit, "Read", [.int64(since)], feature: "the audit trail", timeout: Int32.max)
            guard reply.count == 3, case .array(_, let rows) = reply[0], let unreadable = reply[1].uint32, let locked = reply[2].strings
            else { throw .protocolError(reason: "the reply to Read does not have the declared type") }
            let entries = try rows.map { (row) throws(KeychainError) -> KeychainProvider.AuditEntry in
                guard let fields = row.variantMap, case .int64(let time)? = fields["time"], let event = fields["event"]?.string,
                    let identity = fields["identity"]?.string
                else { throw .protocolError(reason: "an entry of the audit trail lacks its time, event or identity") }
                var pid: Int32?
                if case .int32(let number)? = fields["pid"] { pid = number }
                var item: Int64?
                if case .int64(let number)? = fields["item"] { item = number }
                return .init(
                    time: time, event: event, identity: identity, pid: pid, command: fields["command"]?.string,
                    keyring: fields["keyring"]?.string, itemID: item, group: fields["group"]?.string,
                    label: fields["label"]?.string, service: fields["service"]?.string, account: fields["account"]?.string,
                    detail: fields["detail"]?.string)
            }
            return .init(entries: entries, unreadable: Int(unreadable), lockedKeyrings: locked)
        }
    }
}
