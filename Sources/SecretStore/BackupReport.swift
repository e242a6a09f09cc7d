extension Store {
    /// What the verification of a backup found (``Store/backup(to:replacing:keys:)``,
    /// ``Store/verifyBackup(at:keys:)``): the copy passed SQLite's integrity check, and every
    /// item the keys held open opened in it.
    public struct BackupReport: Equatable, Sendable {
        /// Keyrings in the copy.
        public var keyrings = 0
        /// Items opened in the copy with the keys held.
        public var opened = 0
        /// Items of keyrings whose keys are not held (locked): copied, not opened.
        public var notChecked = 0
        /// The copy's size in bytes.
        public var bytes = 0

        /// Nothing verified yet.
        public init() {}
    }
}
