import KeychainCore

/// Checks on caller input, made before anything reaches the provider.
enum Validation {
    /// The largest secret the library stores, in bytes (8 MiB, as secretd).
    static let maximumSecretSize = KeychainLimits.secretSize
    /// The largest text field (service, account, label, comment, …) in bytes (64 KiB, as secretd).
    static let maximumTextSize = KeychainLimits.textSize

    /// Rejects empty (unless allowed), oversized or NUL-containing text for `field`.
    static func text(_ value: String, field: String, allowEmpty: Bool = false) throws(KeychainError) {
        if value.isEmpty && !allowEmpty { throw .invalidInput(.empty(field: field)) }
        if value.utf8.count > maximumTextSize {
            throw .invalidInput(.tooLarge(field: field, limit: maximumTextSize))
        }
        if value.utf8.contains(0) { throw .invalidInput(.containsNUL(field: field)) }
    }

    /// Validates an optional text field.
    static func optionalText(_ value: String?, field: String) throws(KeychainError) {
        if let value { try text(value, field: field, allowEmpty: true) }
    }

    /// Rejects a secret larger than ``maximumSecretSize``.
    static func secretSize(_ count: Int) throws(KeychainError) {
        if count > maximumSecretSize {
            throw .invalidInput(.tooLarge(field: "value", limit: maximumSecretSize))
        }
    }
}
