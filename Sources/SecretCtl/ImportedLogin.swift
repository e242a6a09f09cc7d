import FoundationEssentials
import Keychain

/// One entry of a password manager's export (``PasswordManagerImport``), before it becomes an
/// item: the fields every manager has, and the rule that turns them into attributes, one for
/// all managers.
///
/// - A password with a URL that names a host becomes an internet password (GNOME's
///   network-password attributes: `server`, `user`, `protocol`, `port`), which browsers, GNOME
///   programs and `InternetKeychain` find; without one, a generic password (`service` is the
///   title, `account` and `username` the user name), which `secretctl get SERVICE ACCOUNT` and
///   Python's keyring find.
/// - An entry without a password but with notes (a secure note) keeps the notes as its secret.
/// - Notes, a TOTP setting (`otpauth://…` or a bare seed), the folder or tags and custom fields
///   are kept as attributes (secretd seals attributes like the secret; any client that may
///   read the item may read them).
/// - An entry with neither a password nor notes has nothing to keep, and is skipped.
struct ImportedLogin {
    /// The attribute notes are kept in.
    static let notesAttribute = "notes"
    /// The attribute a TOTP setting is kept in, as the manager wrote it.
    static let otpAttribute = "otpauth"
    /// The attribute the folder (Bitwarden) is kept in.
    static let folderAttribute = "folder"
    /// The attribute the tags (1Password) are kept in.
    static let tagsAttribute = "tags"
    /// The prefix of a custom field's attribute (`field:PIN`).
    static let fieldPrefix = "field:"

    var title = ""
    var url = ""
    var username = ""
    var password = ""
    var notes = ""
    var otp = ""
    /// Folder, tags and custom fields, by attribute name.
    var extra: [String: String] = [:]

    /// The item to store, or nil when there is nothing to keep.
    var item: ExportFile.Item? {
        let secret: String
        var attributes: [String: String]
        if !password.isEmpty {
            secret = password
            if let network = Self.networkAttributes(url: url, user: username) {
                attributes = network
            } else {
                attributes = genericAttributes
            }
            if !notes.isEmpty { attributes[Self.notesAttribute] = notes }
        } else if !notes.isEmpty {
            secret = notes
            attributes = genericAttributes
        } else {
            return nil
        }
        if !otp.isEmpty { attributes[Self.otpAttribute] = otp }
        for (name, value) in extra where !value.isEmpty && attributes[name] == nil { attributes[name] = value }
        return ExportFile.Item(label: label(attributes), attributes: attributes, secret: Data(secret.utf8))
    }

    private var genericAttributes: [String: String] {
        [
            KeychainAttributeName.schema: KeychainAttributeName.genericSchema,
            KeychainAttributeName.service: !title.isEmpty ? title : !url.isEmpty ? url : "imported",
            KeychainAttributeName.account: username, KeychainAttributeName.username: username,
        ]
    }

    private func label(_ attributes: [String: String]) -> String {
        if !title.isEmpty { return title }
        if let host = attributes[KeychainAttributeName.server] { return username.isEmpty ? host : "\(username)@\(host)" }
        return attributes[KeychainAttributeName.service] ?? "imported"
    }

    /// GNOME's network-password attributes for a login at `url` (its host, scheme and port), or
    /// nil when `url` names no host or a port outside 1-65535.
    static func networkAttributes(url: String, user: String) -> [String: String]? {
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
}
