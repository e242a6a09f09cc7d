// The SSKeychain/SAMKeychain-style static calls: one line per operation, default collection.

extension Keychain {
    /// Stores `password` for `service` and `account`, updating the existing item in place.
    ///
    /// - Throws: ``KeychainError/invalidInput(_:)`` for an empty service or account,
    ///   ``KeychainError/locked`` when the keyring stays locked, or another ``KeychainError``.
    public static func setPassword(
        _ password: String, service: String, account: String, label: String? = nil, comment: String? = nil
    ) throws(KeychainError) {
        try Keychain(service: service).set(password, for: account, label: label, comment: comment)
    }

    /// The password stored for `service` and `account`, or `nil` when there is none.
    public static func password(service: String, account: String) throws(KeychainError) -> String? {
        try Keychain(service: service).string(for: account)
    }

    /// Deletes the password stored for `service` and `account`; returns whether there was one.
    @discardableResult
    public static func deletePassword(service: String, account: String) throws(KeychainError) -> Bool {
        try Keychain(service: service).removeValue(for: account)
    }

    /// Every generic password item of every service (no secrets), sorted by service and account.
    /// Throws ``KeychainError/locked`` when some are in a locked keyring, rather than leave them out.
    public static func allAccounts() throws(KeychainError) -> [KeychainItem] {
        try ItemScope.generic(service: nil, accessGroup: nil, collection: nil).items()
    }

    /// ``allAccounts()`` handed to `body` a page at a time (up to a thousand items, in no
    /// order), for a caller that keeps less than every item (`secretctl list` of 100,000).
    /// Throws ``KeychainError/locked`` as it does, after the pages before such an item.
    package static func allAccounts(pages body: ([KeychainItem]) throws(KeychainError) -> Void) throws(KeychainError) {
        try ItemScope.generic(service: nil, accessGroup: nil, collection: nil).forEachItemPage(body)
    }

    /// Every item of `service` (no secrets), sorted by account.
    public static func accounts(service: String) throws(KeychainError) -> [KeychainItem] {
        try Keychain(service: service).allAccounts()
    }
}
