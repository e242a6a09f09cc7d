/// The protocol of an internet password, stored lower-case in the `protocol` attribute as GNOME
/// applications do (`https`, `smb`, `sftp`, …).
public struct InternetProtocol: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
    /// The attribute value, lower-case.
    public let rawValue: String

    /// Wraps an attribute value; it is lower-cased.
    public init(rawValue: String) { self.rawValue = rawValue.lowercased() }

    /// Wraps a literal such as `"imaps"`.
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// `http`.
    public static let http: InternetProtocol = "http"
    /// `https`.
    public static let https: InternetProtocol = "https"
    /// `ftp`.
    public static let ftp: InternetProtocol = "ftp"
    /// `sftp`.
    public static let sftp: InternetProtocol = "sftp"
    /// `ssh`.
    public static let ssh: InternetProtocol = "ssh"
    /// `smb` (Windows shares).
    public static let smb: InternetProtocol = "smb"
    /// `imap`.
    public static let imap: InternetProtocol = "imap"
    /// `smtp`.
    public static let smtp: InternetProtocol = "smtp"
    /// `ldap`.
    public static let ldap: InternetProtocol = "ldap"
    /// `dav` (WebDAV).
    public static let dav: InternetProtocol = "dav"
}
