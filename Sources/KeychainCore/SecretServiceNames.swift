// The Secret Service's names on D-Bus, for every part that spells them: the library (what it
// calls beside libsecret), secretd (what it serves), the test support and the benchmark (what
// they call and stand in for). The specification fixes them; one definition keeps a typo out.

/// The bus name, object paths, interfaces, properties and errors of the Secret Service
/// (freedesktop Secret Service API 0.2), with gnome-keyring's extension and secretd's own.
package enum SecretServiceNames {
    /// The well-known bus name a provider owns on the session bus.
    package static let busName = "org.freedesktop.secrets"

    /// The name of the login keyring, which the `default` alias points at (gnome-keyring's
    /// and secretd's, and the last part of its object path).
    package static let loginCollection = "login"
    /// The name of the keyring that lives in memory only (gnome-keyring's and secretd's), behind
    /// the `session` alias.
    package static let sessionCollection = "session"

    /// Whether `name` is a well-known bus name by the D-Bus specification: two or more
    /// dot-separated elements of ASCII letters, digits, `_` and `-`, none empty or starting
    /// with a digit, 255 bytes at most. secretd's `--bus-name` and secretctl's `--from` take one.
    package static func isWellKnownBusName(_ name: String) -> Bool {
        let elements = name.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return name.utf8.count <= 255 && elements.count >= 2 && elements.allSatisfy { element in
            guard let first = element.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
            return element.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    true
                default: false
                }
            }
        }
    }

    /// The object paths of the specification.
    package enum Path {
        /// The service object.
        package static let service = "/org/freedesktop/secrets"
        /// The parent of collection paths (`…/collection/login`) and of their items.
        package static let collectionPrefix = service + "/collection"
        /// The parent of alias paths (`…/aliases/default`).
        package static let aliasPrefix = service + "/aliases"
        /// The parent of session paths.
        package static let sessionPrefix = service + "/session"
        /// The parent of prompt paths.
        package static let promptPrefix = service + "/prompt"
        /// "No object": no prompt needed, no collection, or a secret sent in no session.
        package static let none = "/"

        /// The path of the collection called `name`.
        package static func collection(_ name: String) -> String { "\(collectionPrefix)/\(name)" }
        /// The path of the alias `name` (`default`, `session`, …).
        package static func alias(_ name: String) -> String { "\(aliasPrefix)/\(name)" }
        /// The name of the collection in an item's path (`…/collection/NAME/ID`), or nil.
        package static func collectionName(ofItem path: String) -> String? {
            guard path.hasPrefix(collectionPrefix + "/") else { return nil }
            let parts = path.dropFirst(collectionPrefix.count + 1).split(separator: "/")
            return parts.count == 2 ? String(parts[0]) : nil
        }
    }

    /// The interfaces.
    package enum Interface {
        /// The service (`OpenSession`, `SearchItems`, `GetSecrets`, `ReadAlias`, …).
        package static let service = "org.freedesktop.Secret.Service"
        /// A collection (keyring).
        package static let collection = "org.freedesktop.Secret.Collection"
        /// An item.
        package static let item = "org.freedesktop.Secret.Item"
        /// A session that carries secrets between client and provider.
        package static let session = "org.freedesktop.Secret.Session"
        /// A prompt the provider shows for a call.
        package static let prompt = "org.freedesktop.Secret.Prompt"
        /// gnome-keyring's extension for password-based unlock, creation and change, which
        /// secretd serves too.
        package static let gnomeExtension = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
        /// secretd's own interface for access groups (see secretd(1)).
        package static let accessGroups = "io.github.secretd.AccessGroups1"
        /// secretd's own interface for importing a whole keyring from another provider's files
        /// (see secretd(1)).
        package static let importing = "io.github.secretd.Import1"
        /// secretd's own interface for the desktop portal's app keys: list and delete them
        /// (see secretd(1)).
        package static let appKeys = "io.github.secretd.AppKeys1"
        /// secretd's own interface for quick unlock with a PIN (see secretd(1)).
        package static let quickUnlock = "io.github.secretd.QuickUnlock1"
        /// secretd's own interface for locking every keyring with the keys of its
        /// after-first-unlock items (`secretctl lock --all`; see secretd(1)).
        package static let locking = "io.github.secretd.Locking1"
        /// secretd's own interface for the login keyring's TPM slot (`secretctl tpm`; see secretd(1)).
        package static let tpm = "io.github.secretd.TPM1"
        /// secretd's own interface for sync between a person's machines (`secretctl sync`; see secretd(1)).
        package static let sync = "io.github.secretd.Sync1"
        /// secretd's own interface for looking after the store: its integrity and every item's
        /// seal checked (`secretctl check`), and verified backups (`secretctl backup`; see secretd(1)).
        package static let maintenance = "io.github.secretd.Maintenance1"
        /// secretd's own interface for reading the audit trail (`secretctl audit`; see secretd(1)).
        package static let audit = "io.github.secretd.Audit1"
        /// secretd's own interface for remembered consents of readers (`secretctl consent`; see secretd(1)).
        package static let consent = "io.github.secretd.Consent1"
        /// secretd's own interface for scoped runs (`secretctl run`; see secretd(1)).
        package static let runs = "io.github.secretd.Runs1"
        /// The standard properties interface.
        package static let properties = "org.freedesktop.DBus.Properties"
        /// The standard peer interface (`Ping`).
        package static let peer = "org.freedesktop.DBus.Peer"
    }

    /// The properties set when an item or a collection is created.
    package enum Property {
        /// An item's label (`s`).
        package static let itemLabel = "org.freedesktop.Secret.Item.Label"
        /// An item's attributes (`a{ss}`).
        package static let itemAttributes = "org.freedesktop.Secret.Item.Attributes"
        /// A collection's label (`s`).
        package static let collectionLabel = "org.freedesktop.Secret.Collection.Label"
    }

    /// The error names of the specification and of gnome-keyring.
    package enum ErrorName {
        /// The object must be unlocked first.
        package static let isLocked = "org.freedesktop.Secret.Error.IsLocked"
        /// The session does not exist.
        package static let noSession = "org.freedesktop.Secret.Error.NoSession"
        /// No such item, collection, session or prompt.
        package static let noSuchObject = "org.freedesktop.Secret.Error.NoSuchObject"
        /// gnome-keyring's refusal, also for a wrong password.
        package static let denied = "org.gnome.keyring.Error.Denied"
        /// A refusal some providers send under the specification's namespace.
        package static let accessDenied = "org.freedesktop.Secret.Error.AccessDenied"
        /// secretd's answer to every call while its database cannot be used (damaged, or
        /// written by a newer secretd); the message names the file and what to do.
        package static let unusableDatabase = "io.github.secretd.Error.UnusableDatabase"
    }

    /// Whether `name` may name a collection (the last part of its object path): 1 to 64 ASCII
    /// letters, digits and `_`, as the names ``collectionName(fromLabel:)`` makes are and
    /// gnome-keyring's usually are (`login`).
    package static func isCollectionName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy {
            $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0)
        }
    }

    /// Whether `name` may be an alias: the same rule as ``isCollectionName(_:)``, since an alias
    /// is the last element of its object path (`/org/freedesktop/secrets/aliases/NAME`). A longer
    /// one could make a path over sd-bus's 64 KiB, whose calls sd-bus drops unanswered.
    package static func isAliasName(_ name: String) -> Bool { isCollectionName(name) }

    /// A collection name made from a label: lower-case ASCII letters, digits and `_`, never empty.
    package static func collectionName(fromLabel label: String) -> String {
        let cleaned = String(label.lowercased().unicodeScalars.map {
            ($0.properties.isAlphabetic && $0.isASCII) || ("0"..."9").contains(Character($0)) ? Character($0) : "_"
        })
        return cleaned.isEmpty ? "collection" : String(cleaned.prefix(64))
    }
}
