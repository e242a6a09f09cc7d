import Foundation
import SecretCtl

/// `secretctl import` of a password manager's export: the detection by content, Bitwarden's
/// JSON and CSV, Apple Passwords' and 1Password's CSV, and the mapping of entries to items.
enum PasswordManagerImportTarget {
    /// The target.
    static let target = FuzzTarget(
        name: "password-manager-import", summary: "Bitwarden, Apple Passwords and 1Password exports", maximumLength: 16384, run: run)

    private static let schemas: Set<String?> = ["org.gnome.keyring.NetworkPassword", "org.freedesktop.Secret.Generic"]

    private static func run(_ data: Data) {
        guard !ExportFile.isExport(data), let source = PasswordManagerImport.source(of: data) else { return }
        require(PasswordManagerImport.source(of: data) == source, "the detection changed its mind")
        guard let contents = try? PasswordManagerImport.contents(data, source: source) else { return }
        for item in contents.items {
            require(!item.secret.isEmpty, "an item without a secret")
            require(schemas.contains(item.attributes["xdg:schema"]), "an item with schema \(String(describing: item.attributes["xdg:schema"]))")
            if item.attributes["xdg:schema"] == "org.gnome.keyring.NetworkPassword" {
                require(item.attributes["server"].map { !$0.isEmpty } ?? false, "an internet password without a server")
                if let port = item.attributes["port"] {
                    require(Int(port).map { (1...65535).contains($0) } ?? false, "an item with port \(port.debugDescription)")
                }
            } else {
                require(item.attributes["service"].map { !$0.isEmpty } ?? false, "a generic password without a service")
            }
            require(!item.label.isEmpty, "an item without a label")
        }
    }
}
