public import FoundationEssentials

/// Internet passwords of one server, in the attribute schema GNOME applications use for network
/// passwords (`org.gnome.keyring.NetworkPassword`), so both see the same items.
///
/// ```swift
/// let web = try InternetKeychain(server: "git.example.com", protocol: .https)
/// try web.set("token", for: "alice")
/// let token = try web.password(for: "alice")
/// ```
///
/// Fields left `nil` are wildcards when reading and deleting (an item with any port matches a
/// handle without one), and absent when writing: a write updates only the item with exactly
/// this server, protocol, port, path, authentication type, domain and account.
public struct InternetKeychain: Sendable {
    /// The host name (`server` attribute).
    public let server: String
    /// The protocol (`protocol` attribute).
    public let `protocol`: InternetProtocol?
    /// The port (`port` attribute).
    public let port: Int?
    /// The path on the server (`object` attribute, as GNOME calls it).
    public let path: String?
    /// The authentication type (`authtype` attribute).
    public let authenticationType: AuthenticationType?
    /// The security domain, for example a Windows domain (`domain` attribute).
    public let domain: String?
    /// The access group items are written to and read from, as in ``Keychain/accessGroup``.
    public let accessGroup: String?
    /// The collection items are written to and read from, as in ``Keychain/collection``.
    public let collection: KeychainCollection?
    /// The accessibility class every write stores, as in ``Keychain/accessibility``.
    public let accessibility: KeychainAccessibility?

    let scope: ItemScope

    /// Creates a handle for the internet passwords of `server`.
    ///
    /// - Throws: ``KeychainError/invalidInput(_:)`` for an empty server, a port outside
    ///   0...65535, or text fields that are empty, too large or contain NUL.
    public init(
        server: String, protocol: InternetProtocol? = nil, port: Int? = nil, path: String? = nil,
        authenticationType: AuthenticationType? = nil, domain: String? = nil,
        accessGroup: String? = nil, collection: KeychainCollection? = nil, accessibility: KeychainAccessibility? = nil
    ) throws(KeychainError) {
        try Validation.text(server, field: "server")
        if let `protocol` { try Validation.text(`protocol`.rawValue, field: "protocol") }
        if let port, !(0...65535).contains(port) {
            throw .invalidInput(.tooLarge(field: "port", limit: 65535))
        }
        if let path { try Validation.text(path, field: "path") }
        if let authenticationType { try Validation.text(authenticationType.rawValue, field: "authentication type") }
        if let domain { try Validation.text(domain, field: "domain") }
        if let accessGroup { try Validation.text(accessGroup, field: "access group") }
        if let collection { try Validation.text(collection.alias, field: "collection") }
        self.server = server
        self.protocol = `protocol`
        self.port = port
        self.path = path
        self.authenticationType = authenticationType
        self.domain = domain
        self.accessGroup = accessGroup
        self.collection = collection
        self.accessibility = accessibility

        typealias Name = KeychainAttributeName
        var base: [String: String] = [Name.server: server]
        base[Name.protocol] = `protocol`?.rawValue
        base[Name.port] = port.map(String.init)
        base[Name.object] = path
        base[Name.authenticationType] = authenticationType?.rawValue
        base[Name.domain] = domain
        base[Name.accessGroup] = accessGroup
        let labelSuffix = (port.map { ":\($0)" } ?? "") + (path.map { $0.hasPrefix("/") ? $0 : "/" + $0 } ?? "")
        self.scope = ItemScope(
            schema: Name.networkSchema, base: base,
            keyNames: [
                Name.server, Name.protocol, Name.port, Name.object, Name.authenticationType, Name.domain,
                Name.accessGroup,
            ],
            accountName: Name.user, mirrorAccountName: nil, serviceName: Name.server, collection: collection,
            defaultLabel: { account in "\(account)@\(server)\(labelSuffix)" }, accessibility: accessibility)
    }

    /// Every internet password item of every server (no secrets), sorted by server and account;
    /// ``KeychainItem/service`` is the server. Throws ``KeychainError/locked`` when some are in
    /// a locked keyring, rather than leave them out.
    public static func allAccounts() throws(KeychainError) -> [KeychainItem] {
        try everyServer.items()
    }

    /// ``allAccounts()-swift.type.method`` handed to `body` a page at a time (up to a thousand
    /// items, in no order), for a caller that keeps less than every item (`secretctl list`).
    /// Throws ``KeychainError/locked`` as it does, after the pages before such an item.
    package static func allAccounts(pages body: ([KeychainItem]) throws(KeychainError) -> Void) throws(KeychainError) {
        try everyServer.forEachItemPage(body)
    }

    /// The internet passwords of every server.
    private static var everyServer: ItemScope {
        ItemScope(
            schema: KeychainAttributeName.networkSchema, base: [:], keyNames: [], accountName: KeychainAttributeName.user,
            mirrorAccountName: nil, serviceName: KeychainAttributeName.server, collection: nil, defaultLabel: { $0 })
    }

    /// The password stored for `account`, or `nil` when there is none.
    public func password(for account: String) throws(KeychainError) -> String? {
        try Validation.text(account, field: "account")
        return try scope.read(account: account) { bytes, _ throws(KeychainError) in try SecretCoding.string(bytes) }
    }

    /// The bytes stored for `account`, or `nil` when there is none.
    public func data(for account: String) throws(KeychainError) -> Data? {
        try Validation.text(account, field: "account")
        return try scope.read(account: account) { bytes, _ in SecretCoding.data(bytes) }
    }

    /// Stores `password` for `account`, updating the existing item in place; `nil` label or
    /// comment keeps an existing item's (a new item is labelled "account@server[:port][/path]").
    public func set(_ password: String, for account: String, label: String? = nil, comment: String? = nil)
        throws(KeychainError)
    {
        try Validation.text(account, field: "account")
        try Validation.optionalText(label, field: "label")
        try Validation.optionalText(comment, field: "comment")
        try scope.write(
            account: account, secret: SecretCoding.buffer(password), contentType: SecretCoding.textType,
            label: label, comment: comment)
    }

    /// Deletes every item a read of `account` could return; returns whether there was one.
    @discardableResult
    public func removeValue(for account: String) throws(KeychainError) -> Bool {
        try Validation.text(account, field: "account")
        return try scope.remove(account: account)
    }

    /// Whether an item exists for `account`; never shows a prompt.
    public func contains(_ account: String) throws(KeychainError) -> Bool {
        try Validation.text(account, field: "account")
        return try scope.contains(account: account)
    }

    /// The attributes of the item stored for `account` (no secret), or `nil`; never prompts.
    public func attributes(for account: String) throws(KeychainError) -> KeychainItem? {
        try Validation.text(account, field: "account")
        return try scope.item(account: account)
    }

    /// Every item matching this handle, sorted by account; ``KeychainItem/service`` is the server.
    /// Throws ``KeychainError/locked`` when some are in a locked keyring.
    public func allAccounts() throws(KeychainError) -> [KeychainItem] {
        try scope.items()
    }

    /// Async variant of ``password(for:)``.
    public func password(for account: String) async throws(KeychainError) -> String? {
        try await BlockingCall.run { () throws(KeychainError) in try password(for: account) }
    }

    /// Async variant of ``data(for:)``.
    public func data(for account: String) async throws(KeychainError) -> Data? {
        try await BlockingCall.run { () throws(KeychainError) in try data(for: account) }
    }

    /// Async variant of ``contains(_:)``.
    public func contains(_ account: String) async throws(KeychainError) -> Bool {
        try await BlockingCall.run { () throws(KeychainError) in try contains(account) }
    }

    /// Async variant of ``attributes(for:)``.
    public func attributes(for account: String) async throws(KeychainError) -> KeychainItem? {
        try await BlockingCall.run { () throws(KeychainError) in try attributes(for: account) }
    }

    /// Async variant of ``set(_:for:label:comment:)``.
    public func set(_ password: String, for account: String, label: String? = nil, comment: String? = nil)
        async throws(KeychainError)
    {
        try await BlockingCall.run { () throws(KeychainError) in
            try set(password, for: account, label: label, comment: comment)
        }
    }

    /// Async variant of ``removeValue(for:)``.
    @discardableResult
    public func removeValue(for account: String) async throws(KeychainError) -> Bool {
        try await BlockingCall.run { () throws(KeychainError) in try removeValue(for: account) }
    }

    /// Async variant of ``allAccounts()-swift.type.method``.
    public static func allAccounts() async throws(KeychainError) -> [KeychainItem] {
        try await BlockingCall.run { () throws(KeychainError) in try allAccounts() }
    }

    /// Async variant of ``allAccounts()-swift.method``.
    public func allAccounts() async throws(KeychainError) -> [KeychainItem] {
        try await BlockingCall.run { () throws(KeychainError) in try allAccounts() }
    }
}
