public import SecretCrypto

/// A gnome-keyring keyring as its file holds it: what `secretctl import gnome-keyring` carries
/// over into secretd, field by field.
public struct GnomeKeyring: Sendable {
    /// The keyring's name: its file name without `.keyring` (`login` for the login keyring),
    /// which is also the last part of its object path in gnome-keyring.
    public var name: String
    /// The name shown to people (`Login`).
    public var label: String
    /// When the keyring was created and last changed (seconds since 1970).
    public var created: UInt64
    public var modified: UInt64
    /// The items, in the file's order.
    public var items: [Item]

    /// One item of a keyring.
    public struct Item: Sendable {
        /// The item's label.
        public var label: String
        /// Its attributes as gnome-keyring shows them over D-Bus: integer attributes of the old
        /// API as decimal strings, and `xdg:schema` from the item's type when it has none.
        public var attributes: [String: String]
        /// The secret, byte for byte.
        public var secret: SecureBytes
        /// When the item was created and last changed (seconds since 1970).
        public var created: UInt64
        public var modified: UInt64
    }
}
