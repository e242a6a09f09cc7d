/// The version of the package's programs (secretd, secretctl), printed by their `--version`.
package enum KeychainVersion {
    /// `MAJOR.MINOR.PATCH`.
    package static let current = "0.1.0"
}
