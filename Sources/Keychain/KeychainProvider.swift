/// Keyring control for this package's command line (`secretctl status`, `lock`, `unlock`):
/// not part of the library's public API yet.
package enum KeychainProvider {
    /// A keyring (collection) as the provider reports it.
    package struct Collection: Equatable, Sendable {
        /// Its D-Bus object path.
        package var path: String
        /// Its label.
        package var label: String
        /// Whether it is locked.
        package var isLocked: Bool
        /// How many items it holds.
        package var itemCount: Int
    }

    /// The provider's unique bus name and process id.
    package static func owner() throws(KeychainError) -> (name: String, pid: UInt32?) {
        try LibSecret.providerOwner()
    }

    /// Every keyring of the provider.
    package static func collections() throws(KeychainError) -> [Collection] {
        try LibSecret.collections().map {
            Collection(path: $0.path, label: $0.label, isLocked: $0.isLocked, itemCount: $0.itemCount)
        }
    }

    /// Locks the keyring behind `alias` (the default keyring when not given).
    package static func lock(alias: String = KeychainCollection.default.alias) throws(KeychainError) {
        try LibSecret.lock(alias: alias)
    }

    /// Unlocks the keyring behind `alias` with `password`, or through the provider's prompt
    /// when `password` is nil. A wrong password is `.accessDenied`.
    package static func unlock(alias: String = KeychainCollection.default.alias, password: [UInt8]?) throws(KeychainError) {
        let buffer = password.map { bytes in bytes.withUnsafeBytes { SecretBuffer(copying: $0) } }
        try LibSecret.unlock(alias: alias, password: buffer)
    }

    /// Changes the password of the keyring behind `alias`: from `current` to `new`, or through
    /// the provider's prompt when both are nil. A wrong current password is `.accessDenied`.
    package static func changePassword(
        alias: String = KeychainCollection.default.alias, current: [UInt8]?, new: [UInt8]?
    ) throws(KeychainError) {
        if let current, let new {
            let buffers = (
                current.withUnsafeBytes { SecretBuffer(copying: $0) }, new.withUnsafeBytes { SecretBuffer(copying: $0) }
            )
            try LibSecret.changePassword(alias: alias, passwords: (buffers.0, buffers.1))
        } else {
            try LibSecret.changePassword(alias: alias, passwords: nil)
        }
    }
}
