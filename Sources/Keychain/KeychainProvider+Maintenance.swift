// secretd's Maintenance1 interface, for `secretctl check` (and `backup`): what the command
// line reads of the store's own state.

extension KeychainProvider {
    /// What secretd's check of its store found (`secretctl check`).
    package struct StoreCheck: Equatable, Sendable {
        /// One keyring's part of the check.
        package struct Keyring: Equatable, Sendable {
            /// Its name (the last part of its object path).
            package var name: String
            /// Its label.
            package var label: String
            /// Whether it was unlocked, so that its items could be opened.
            package var isUnlocked: Bool
            /// Items that opened.
            package var opened: Int
            /// Items not tried: their key is not held (the keyring is locked).
            package var notChecked: Int
            /// Items that did not open: their database id and what failed.
            package var failures: [(id: Int64, reason: String)]

            /// Whether two reports of a keyring say the same (the failures compared field by field:
            /// tuples are not `Equatable`).
            package static func == (lhs: Keyring, rhs: Keyring) -> Bool {
                (lhs.name, lhs.label, lhs.isUnlocked, lhs.opened, lhs.notChecked) == (rhs.name, rhs.label, rhs.isUnlocked, rhs.opened, rhs.notChecked)
                    && lhs.failures.map(\.id) == rhs.failures.map(\.id) && lhs.failures.map(\.reason) == rhs.failures.map(\.reason)
            }
        }

        /// SQLite's integrity findings; empty when the database file is sound.
        package var integrityProblems: [String]
        /// Every keyring, with what its items' check found.
        package var keyrings: [Keyring]

        /// Whether nothing is wrong (locked keyrings aside, which were not checked).
        package var isSound: Bool { integrityProblems.isEmpty && keyrings.allSatisfy(\.failures.isEmpty) }
    }

    /// What secretd verified of a backup it wrote (`secretctl backup`).
    package struct BackupReport: Equatable, Sendable {
        /// Keyrings in the copy.
        package var keyrings: Int
        /// Items opened in the copy with the keys secretd holds.
        package var verified: Int
        /// Items of locked keyrings: copied, sealed, not opened.
        package var notChecked: Int
        /// The copy's size in bytes.
        package var bytes: UInt64
    }

    /// Has secretd write a verified copy of its whole store to `path` (absolute), over an
    /// existing file only when `replacing`.
    package static func backupStore(to path: String, replacing: Bool) throws(KeychainError) -> BackupReport {
        try LibSecret.backupStore(to: path, replacing: replacing)
    }

    /// Has secretd verify the backup at `path` (absolute) as it verifies one it writes.
    package static func verifyBackup(at path: String) throws(KeychainError) -> BackupReport {
        try LibSecret.verifyBackup(at: path)
    }

    /// What a restore did (`secretctl restore`).
    package struct RestoreReport: Equatable, Sendable {
        /// secretd's check of the backup before it restored it.
        package var backup: BackupReport
        /// Where secretd kept the data the backup replaced.
        package var previous: String
    }

    /// secretd's automatic backups (`backup-interval`, `backup-keep` in secretd.conf).
    package struct AutomaticBackups: Equatable, Sendable {
        /// Where they go.
        package var directory: String
        /// Seconds between two; 0: off.
        package var interval: Int
        /// How many are kept.
        package var keep: Int
        /// The newest, if any.
        package var lastFile: String?
        /// When the newest was taken (Unix time), if any.
        package var lastTime: Int64?
        /// Why the last attempt failed; nil when it did not.
        package var lastFailure: String?
    }

    /// Has secretd replace its whole store with the backup at `path` (absolute), checked
    /// first; every keyring is locked afterwards.
    package static func restoreStore(from path: String) throws(KeychainError) -> RestoreReport {
        try LibSecret.restoreStore(from: path)
    }

    /// secretd's automatic backups: settings and the last one.
    package static func automaticBackups() throws(KeychainError) -> AutomaticBackups { try LibSecret.automaticBackups() }

    /// Has secretd check its database and every item of its unlocked keyrings.
    package static func checkStore() throws(KeychainError) -> StoreCheck { try LibSecret.checkStore() }
}
