public import FoundationEssentials

// Async variants: each runs its synchronous twin on a dedicated thread (never on the
// cooperative pool), so a prompt that stays open for minutes blocks nobody else. Cancelling
// the calling task cancels the libsecret call, which then throws `KeychainError.cancelled`.

extension Keychain {
    /// Async variant of ``setPassword(_:service:account:label:comment:)``.
    public static func setPassword(
        _ password: String, service: String, account: String, label: String? = nil, comment: String? = nil
    ) async throws(KeychainError) {
        try await BlockingCall.run { () throws(KeychainError) in
            try setPassword(password, service: service, account: account, label: label, comment: comment)
        }
    }

    /// Async variant of ``password(service:account:)``.
    public static func password(service: String, account: String) async throws(KeychainError) -> String? {
        try await BlockingCall.run { () throws(KeychainError) in try password(service: service, account: account) }
    }

    /// Async variant of ``deletePassword(service:account:)``.
    @discardableResult
    public static func deletePassword(service: String, account: String) async throws(KeychainError) -> Bool {
        try await BlockingCall.run { () throws(KeychainError) in try deletePassword(service: service, account: account) }
    }

    /// Async variant of ``allAccounts()-swift.type.method``.
    public static func allAccounts() async throws(KeychainError) -> [KeychainItem] {
        try await BlockingCall.run { () throws(KeychainError) in try allAccounts() }
    }

    /// Async variant of ``accounts(service:)``.
    public static func accounts(service: String) async throws(KeychainError) -> [KeychainItem] {
        try await BlockingCall.run { () throws(KeychainError) in try accounts(service: service) }
    }

    /// Async variant of ``string(for:)``.
    public func string(for account: String) async throws(KeychainError) -> String? {
        try await BlockingCall.run { () throws(KeychainError) in try string(for: account) }
    }

    /// Async variant of ``data(for:)``.
    public func data(for account: String) async throws(KeychainError) -> Data? {
        try await BlockingCall.run { () throws(KeychainError) in try data(for: account) }
    }

    /// Async variant of ``value(_:for:)``.
    public func value<T: Decodable & Sendable>(_ type: T.Type, for account: String) async throws(KeychainError) -> T? {
        try await BlockingCall.run { () throws(KeychainError) in try value(type, for: account) }
    }

    /// Async variant of ``contains(_:)``.
    public func contains(_ account: String) async throws(KeychainError) -> Bool {
        try await BlockingCall.run { () throws(KeychainError) in try contains(account) }
    }

    /// Async variant of ``attributes(for:)``.
    public func attributes(for account: String) async throws(KeychainError) -> KeychainItem? {
        try await BlockingCall.run { () throws(KeychainError) in try attributes(for: account) }
    }

    /// Async variant of ``allAccounts()-swift.method``.
    public func allAccounts() async throws(KeychainError) -> [KeychainItem] {
        try await BlockingCall.run { () throws(KeychainError) in try allAccounts() }
    }

    /// Async variant of ``set(_:for:label:comment:)-(String,_,_,_)``.
    public func set(_ value: String, for account: String, label: String? = nil, comment: String? = nil)
        async throws(KeychainError)
    {
        try await BlockingCall.run { () throws(KeychainError) in try set(value, for: account, label: label, comment: comment) }
    }

    /// Async variant of ``set(_:for:label:comment:)-(Data,_,_,_)``.
    public func set(_ value: Data, for account: String, label: String? = nil, comment: String? = nil)
        async throws(KeychainError)
    {
        try await BlockingCall.run { () throws(KeychainError) in try set(value, for: account, label: label, comment: comment) }
    }

    /// Async variant of ``setValue(_:for:label:comment:)``.
    public func setValue<T: Encodable & Sendable>(
        _ value: T, for account: String, label: String? = nil, comment: String? = nil
    ) async throws(KeychainError) {
        try await BlockingCall.run { () throws(KeychainError) in
            try setValue(value, for: account, label: label, comment: comment)
        }
    }

    /// Async variant of ``removeValue(for:)``.
    @discardableResult
    public func removeValue(for account: String) async throws(KeychainError) -> Bool {
        try await BlockingCall.run { () throws(KeychainError) in try removeValue(for: account) }
    }

    /// Async variant of ``removeAll()``.
    @discardableResult
    public func removeAll() async throws(KeychainError) -> Int {
        try await BlockingCall.run { () throws(KeychainError) in try removeAll() }
    }
}
