import FoundationEssentials
import Keychain

/// How a login's fields stand in an item's attributes, both ways, for every importer and
/// exporter of secretctl (``ImportedLogin``, ``CSVImport``, ``CSVExport``, ``KDBXExport``):
/// a URL as GNOME's network-password attributes and back, the user name, and the attributes
/// that hold what a password manager keeps beside the password.
enum LoginAttributes {
    /// Notes.
    static let notes = "notes"
    /// A TOTP setting, as the manager wrote it (`otpauth://…` or a bare seed).
    static let otp = "otpauth"
    /// The folder (Bitwarden), or a KeePass entry's group path (`Work/Servers`).
    static let folder = "folder"
    /// The tags (1Password, KeePass).
    static let tags = "tags"
    /// The prefix of a custom field's attribute (`field:PIN`).
    static let fieldPrefix = "field:"

    /// GNOME's network-password attributes for a login at `url` (its host, scheme and port), or
    /// nil when `url` names no host or a port outside 1-65535.
    static func attributes(url: String, user: String) -> [String: String]? {
        guard let parsed = URL(string: url), let host = parsed.host, !host.isEmpty,
            parsed.port.map({ (1...65535).contains($0) }) ?? true
        else { return nil }
        var attributes = [
            KeychainAttributeName.schema: KeychainAttributeName.networkSchema, KeychainAttributeName.server: host,
            KeychainAttributeName.user: user,
        ]
        if let scheme = parsed.scheme { attributes[KeychainAttributeName.protocol] = scheme.lowercased() }
        if let port = parsed.port { attributes[KeychainAttributeName.port] = String(port) }
        return attributes
    }

    /// `protocol://server[:port]/` of an internet password; empty for other items.
    static func url(of attributes: [String: String]) -> String {
        guard attributes[KeychainAttributeName.schema] == KeychainAttributeName.networkSchema,
            let server = attributes[KeychainAttributeName.server], !server.isEmpty
        else { return "" }
        let scheme = attributes[KeychainAttributeName.protocol].flatMap { $0.isEmpty ? nil : $0 } ?? "https"
        let host = server.contains(":") && !server.hasPrefix("[") ? "[\(server)]" : server
        let port = attributes[KeychainAttributeName.port].map { ":\($0)" } ?? ""
        return "\(scheme)://\(host)\(port)/"
    }

    /// The user name of an item: its `user` (internet passwords), else `account`, else `username`.
    static func userName(of attributes: [String: String]) -> String {
        attributes[KeychainAttributeName.user] ?? attributes[KeychainAttributeName.account] ?? attributes[KeychainAttributeName.username] ?? ""
    }
}
