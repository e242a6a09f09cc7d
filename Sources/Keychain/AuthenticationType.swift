/// How an internet password authenticates, stored in the `authtype` attribute.
public struct AuthenticationType: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
    /// The attribute value.
    public let rawValue: String

    /// Wraps an attribute value.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Wraps a literal such as `"ntlm"`.
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// HTTP basic authentication.
    public static let basic: AuthenticationType = "basic"
    /// HTTP digest authentication.
    public static let digest: AuthenticationType = "digest"
    /// NTLM.
    public static let ntlm: AuthenticationType = "ntlm"
    /// A password sent in an HTML form.
    public static let htmlForm: AuthenticationType = "form"
    /// The protocol's default method.
    public static let `default`: AuthenticationType = "default"
}
