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
/// - Notes, a TOTP setting, the folder or tags and custom fields are kept as attributes
///   (``LoginAttributes``) (secretd seals attributes like the secret; any client that may
///   read the item may read them).
/// - An entry with neither a password nor notes has nothing to keep, and is skipped.
struct ImportedLogin {
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
            if let network = LoginAttributes.attributes(url: url, user: username) {
                attributes = network
            } else {
                attributes = genericAttributes
            }
            if !notes.isEmpty { attributes[LoginAttributes.notes] = notes }
        } else if !notes.isEmpty {
            secret = notes
            attributes = genericAttributes
        } else {
            return nil
        }
        if !otp.isEmpty { attributes[LoginAttributes.otp] = otp }
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
}
