// io.github.secretd.Audit1
//
// Reading the audit trail (secretctl audit): every secret read, write, delete, refusal, unlock
// and lock that AuditTrail recorded, for unconfined clients outside a sandbox only.

import KeychainCore
import FoundationEssentials
import SecretStore
import DBusValues

extension Introspection {
    /// secretd's own: the audit trail, for unconfined clients outside a sandbox (its rule): a
    /// confined program must not learn what other programs read.
    static let auditInterface = BusInterface(name: audit, objects: .service, methods: [
        Method(name: "Read", rule: .unconfined, arguments: [Argument(name: "since_ms", type: "x")],
               results: [
                   Argument(name: "entries", type: "aa{sv}"), Argument(name: "unreadable", type: "u"),
                   Argument(name: "locked_keyrings", type: "as"),
               ],
               handler: .now { provider, call throws(SecretServiceError) in
                   try AuditObject(provider).read(since: call.argument(0), for: call.sender)
               }),
    ])
}

/// secretd's Audit1 interface: the audit trail, read back.
struct AuditObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// `Read`: the entries from `since` (milliseconds since 1970) on, oldest first, each an
    /// `a{sv}` of the fields it has (`time` x, `event`, `identity` s, `pid` i, `command`,
    /// `keyring` s, `item` x, `group`, `label`, `service`, `account`, `detail` s); then how many
    /// sealed records of entries could not be opened and the locked keyrings that hold their key. An item's
    /// label, service and account are left out for a reader that may not see its group.
    fileprivate func read(since: Int64, for sender: String) throws(SecretServiceError) -> DBusValue {
        let audit = provider.audit
        guard audit.isOn else { throw .notSupported("the audit trail is off (audit-keep = 0 in secretd.conf)") }
        let caller = try provider.caller(sender).get()
        let reading: Store.AuditReading
        do {
            reading = try audit.read(since: Date(timeIntervalSince1970: Double(since) / 1000))
        } catch {
            throw provider.storeFailure(error)
        }
        let entries = reading.entries.map { entry -> DBusValue in
            var fields: [String: DBusValue] = [
                "time": .int64(entry.time), "event": .string(entry.event.rawValue), "identity": .string(entry.identity),
            ]
            if let pid = entry.pid { fields["pid"] = .int32(pid) }
            if let command = entry.command { fields["command"] = .string(command) }
            if let keyring = entry.keyring { fields["keyring"] = .string(keyring) }
            if let item = entry.itemID { fields["item"] = .int64(item) }
            if let group = entry.accessGroup { fields["group"] = .string(group) }
            if let detail = entry.detail { fields["detail"] = .string(detail) }
            if provider.isAllowedInto(caller, entry.accessGroup) || entry.accessGroup == nil {
                if let label = entry.label { fields["label"] = .string(label) }
                if let service = entry.service { fields["service"] = .string(service) }
                if let account = entry.account { fields["account"] = .string(account) }
            }
            return .properties(fields)
        }
        return .tuple([
            .array(element: "a{sv}", entries), .uint32(UInt32(clamping: reading.unreadable)), .strings(reading.lockedKeyrings),
        ])
    }
}
