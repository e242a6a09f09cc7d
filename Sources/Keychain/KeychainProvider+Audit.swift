// secretd's Audit1 interface, for `secretctl audit`: the audit trail as secretd reads it back.

extension KeychainProvider {
    /// One entry of secretd's audit trail (see secretd(1), AUDIT TRAIL).
    package struct AuditEntry: Equatable, Sendable {
        /// When (milliseconds since 1970).
        package var time: Int64
        /// What happened: `read`, `create`, `change`, `delete`, `unlock`, `lock`,
        /// `create-keyring`, `delete-keyring` or `refused`.
        package var event: String
        /// Who asked, as `secretctl whoami` names it (or `secretd`, `pam_secretd`).
        package var identity: String
        /// Its process id.
        package var pid: Int32?
        /// Its command line.
        package var command: String?
        /// The keyring.
        package var keyring: String?
        /// The item's database id.
        package var itemID: Int64?
        /// The item's access group.
        package var group: String?
        /// The item's label, service and account (absent when the reader may not see its group).
        package var label: String?
        package var service: String?
        package var account: String?
        /// The method or route, or why it was refused.
        package var detail: String?
    }

    /// The audit trail from `since` on, as secretd read it back.
    package struct AuditReading: Equatable, Sendable {
        /// The entries, oldest first.
        package var entries: [AuditEntry]
        /// Sealed records of entries that could not be opened (their keyring is locked, or they
        /// are damaged): an entry each, or the entries of one write sealed together.
        package var unreadable: Int
        /// Locked keyrings that hold the key to the rest.
        package var lockedKeyrings: [String]
    }

    /// Has secretd read its audit trail from `since` (milliseconds since 1970) on.
    package static func readAudit(since: Int64) throws(KeychainError) -> AuditReading { try LibSecret.readAudit(since: since) }
}
