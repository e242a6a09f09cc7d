/// Sizes that the library, secretd and secretctl agree on (documented in secretd(1), LIMITS,
/// and in the README's Limits).
package enum KeychainLimits {
    /// The largest secret stored, in bytes (8 MiB).
    package static let secretSize = 8 * 1024 * 1024
    /// The longest text field (attribute name or value, label, service, account), in bytes.
    package static let textSize = 64 * 1024
    /// The most attributes an item may have.
    package static let attributeCount = 256
    /// The most bytes an item's attributes may take, names and values together: attributes
    /// are for finding an item, and each write hashes and indexes them all (secretd refuses
    /// more, so that one client's writes cannot hold the others up).
    package static let attributeBytes = 64 * 1024
    /// The longest keyring password read from a terminal or standard input, in bytes; the
    /// login control protocol's SECRETD_CONTROL_MAX_PASSWORD is the same (LoginControlTests
    /// checks it).
    package static let passwordSize = 64 * 1024
    /// How long a PIN for quick unlock may be, in bytes (secretd refuses others; secretctl
    /// checks before sending).
    package static let pinLength = 4...64
    /// Wrong PINs in a row after which secretd forgets the PIN (only the password works then).
    package static let pinAttempts = 5
}
