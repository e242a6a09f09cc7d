import KeychainCore
public import FoundationEssentials

/// Generic passwords of one service, stored in the user's Secret Service keyring.
///
/// ```swift
/// let keychain = try Keychain(service: "com.example.mail")
/// try keychain.set("s3cr3t", for: "alice@example.com")
/// let password = try keychain.string(for: "alice@example.com")   // "s3cr3t", or nil
/// ```
///
/// Items carry the attributes `service` and `account` (see ``KeychainAttributeName``), so
/// `secret-tool lookup service com.example.mail account alice@example.com` finds them too.
/// A missing item is `nil`; every other problem is a ``KeychainError``.
///
/// Every call blocks while it talks to the provider over D-Bus, including while an unlock prompt
/// is open; from async code use the `async` variants, which run on a thread of their own.
public struct Keychain: Sendable {
    /// The service every item of this handle belongs to.
    public let service: String
    /// The access group items are written to and read from; `nil` means no group is set on
    /// write (secretd then puts the item in the caller's default group) and items of every
    /// group the caller may see are read. secretd shows a process only the items of groups
    /// it belongs to and refuses writes to others with ``KeychainError/accessDenied(message:)``;
    /// other providers store the group as a plain attribute.
    public let accessGroup: String?
    /// The collection items are written to and read from; `nil` writes to the default
    /// collection and reads from all of them.
    public let collection: KeychainCollection?
    /// The accessibility class every write stores; `nil` stores none, so a new item gets the
    /// provider's default (secretd: `when-unlocked`, or its access group's class) and an
    /// existing one keeps its own.
    public let accessibility: KeychainAccessibility?

    /// The largest value the library stores, in bytes (8 MiB); larger values are rejected
    /// with ``KeychainError/InvalidInput/tooLarge(field:limit:)``.
    public static let maximumValueSize = KeychainLimits.secretSize

    let scope: ItemScope

    /// Creates a handle for the items of `service`, written with the class `accessibility`
    /// when given.
    ///
    /// - Throws: ``KeychainError/invalidInput(_:)`` when `service` or `accessGroup` is empty,
    ///   larger than 64 KiB or contains a NUL character.
    public init(
        service: String, accessGroup: String? = nil, collection: KeychainCollection? = nil,
        accessibility: KeychainAccessibility? = nil
    ) throws(KeychainError) {
        try Validation.text(service, field: "service")
        if let accessGroup { try Validation.text(accessGroup, field: "access group") }
        if let collection { try Validation.text(collection.alias, field: "collection") }
        self.service = service
        self.accessGroup = accessGroup
        self.collection = collection
        self.accessibility = accessibility
        var scope = ItemScope.generic(service: service, accessGroup: accessGroup, collection: collection)
        scope.accessibility = accessibility
        self.scope = scope
    }

    // MARK: - Reading

    /// The text stored for `account`, or `nil` when there is none.
    ///
    /// - Throws: ``KeychainError/unexpectedData(reason:)`` when the value is not UTF-8 text,
    ///   ``KeychainError/locked`` when its keyring stays locked.
    public func string(for account: String) throws(KeychainError) -> String? {
        try Validation.text(account, field: "account")
        return try scope.read(account: account) { bytes, _ throws(KeychainError) in try SecretCoding.string(bytes) }
    }

    /// The bytes stored for `account`, or `nil` when there is none.
    public func data(for account: String) throws(KeychainError) -> Data? {
        try Validation.text(account, field: "account")
        return try scope.read(account: account) { bytes, _ in SecretCoding.data(bytes) }
    }

    /// The JSON value stored for `account` decoded as `type`, or `nil` when there is none.
    ///
    /// - Throws: ``KeychainError/unexpectedData(reason:)`` when the value does not decode.
    public func value<T: Decodable>(_ type: T.Type, for account: String) throws(KeychainError) -> T? {
        try Validation.text(account, field: "account")
        return try scope.read(account: account) { bytes, _ throws(KeychainError) in
            try SecretCoding.decode(type, from: bytes)
        }
    }

    /// Whether an item exists for `account`; never shows a prompt.
    public func contains(_ account: String) throws(KeychainError) -> Bool {
        try Validation.text(account, field: "account")
        return try scope.contains(account: account)
    }

    /// The attributes of the item stored for `account` (no secret), or `nil`; never prompts.
    /// Throws ``KeychainError/locked`` when the item is in a locked keyring.
    public func attributes(for account: String) throws(KeychainError) -> KeychainItem? {
        try Validation.text(account, field: "account")
        return try scope.item(account: account)
    }

    /// Every item of this service, sorted by account; never shows a prompt. Throws
    /// ``KeychainError/locked`` when some are in a locked keyring, rather than leave them out.
    public func allAccounts() throws(KeychainError) -> [KeychainItem] {
        try scope.items()
    }

    // MARK: - Writing

    /// Stores `value` as text for `account`, updating the existing item in place.
    ///
    /// - Parameters:
    ///   - label: The label keyring managers show; `nil` keeps an existing item's label and
    ///     gives a new one "Password for '<account>' on '<service>'".
    ///   - comment: Stored in the `comment` attribute (not encrypted); `nil` keeps the old one.
    public func set(_ value: String, for account: String, label: String? = nil, comment: String? = nil)
        throws(KeychainError)
    {
        try write(SecretCoding.buffer(value), type: SecretCoding.textType, account, label, comment)
    }

    /// Stores raw bytes for `account`, updating the existing item in place.
    public func set(_ value: Data, for account: String, label: String? = nil, comment: String? = nil)
        throws(KeychainError)
    {
        try write(SecretCoding.buffer(value), type: SecretCoding.binaryType, account, label, comment)
    }

    /// Stores `value` encoded as JSON for `account`, updating the existing item in place.
    public func setValue<T: Encodable>(
        _ value: T, for account: String, label: String? = nil, comment: String? = nil
    ) throws(KeychainError) {
        try write(SecretCoding.buffer(encoding: value), type: SecretCoding.jsonType, account, label, comment)
    }

    /// Deletes the item stored for `account`; returns whether there was one.
    @discardableResult
    public func removeValue(for account: String) throws(KeychainError) -> Bool {
        try Validation.text(account, field: "account")
        return try scope.remove(account: account)
    }

    /// Deletes every item of this service (in this handle's group and collection); returns how many.
    @discardableResult
    public func removeAll() throws(KeychainError) -> Int {
        try scope.removeAll()
    }

    private func write(
        _ secret: @autoclosure () throws(KeychainError) -> SecretBuffer, type: String,
        _ account: String, _ label: String?, _ comment: String?
    ) throws(KeychainError) {
        try Validation.text(account, field: "account")
        try Validation.optionalText(label, field: "label")
        try Validation.optionalText(comment, field: "comment")
        try scope.write(account: account, secret: secret(), contentType: type, label: label, comment: comment)
    }
}

extension ItemScope {
    /// The scope of generic passwords (`service` + `account`), optionally of one service.
    static func generic(service: String?, accessGroup: String?, collection: KeychainCollection?) -> ItemScope {
        var base: [String: String] = [:]
        base[KeychainAttributeName.service] = service
        base[KeychainAttributeName.accessGroup] = accessGroup
        return ItemScope(
            schema: KeychainAttributeName.genericSchema, base: base,
            keyNames: [KeychainAttributeName.service, KeychainAttributeName.accessGroup],
            accountName: KeychainAttributeName.account, mirrorAccountName: KeychainAttributeName.username,
            serviceName: KeychainAttributeName.service, collection: collection,
            defaultLabel: { account in "Password for '\(account)' on '\(service ?? "")'" })
    }
}
