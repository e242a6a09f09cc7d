public import FoundationEssentials

/// What the keychain knows about a stored item, without its secret.
public struct KeychainItem: Equatable, Sendable {
    /// Which kind of password an item is, as the keychain's item classes tell them apart.
    public enum Kind: String, Equatable, Sendable {
        /// Found through ``Keychain``: a `service` and an `account`.
        case genericPassword
        /// Found through ``InternetKeychain``: a `server` and a `user`, perhaps a protocol,
        /// port and path.
        case internetPassword
    }

    /// Which kind of password the item is; ``service`` is its server when it is an internet password.
    public var kind: Kind
    /// The service of a generic password, or the server of an internet password.
    public var service: String
    /// The account the secret belongs to.
    public var account: String
    /// The label shown by keyring managers such as Seahorse.
    public var label: String
    /// The comment given on write, if any.
    public var comment: String?
    /// The access group the item belongs to, if it was stored with one.
    public var accessGroup: String?
    /// When the item can be read (``KeychainAccessibility/whenUnlocked`` unless it was stored
    /// with another class).
    public var accessibility: KeychainAccessibility
    /// When the provider created the item.
    public var created: Date
    /// When the provider last changed the item.
    public var modified: Date
    /// Every attribute of the item as the provider reports it (see ``KeychainAttributeName``).
    public var attributes: [String: String]

    /// Creates an item description; the library builds these from what the provider reports.
    public init(
        service: String, account: String, label: String, comment: String? = nil,
        accessGroup: String? = nil, accessibility: KeychainAccessibility = .whenUnlocked, created: Date, modified: Date,
        attributes: [String: String], kind: Kind = .genericPassword
    ) {
        self.kind = kind
        self.service = service
        self.account = account
        self.label = label
        self.comment = comment
        self.accessGroup = accessGroup
        self.accessibility = accessibility
        self.created = created
        self.modified = modified
        self.attributes = attributes
    }
}
