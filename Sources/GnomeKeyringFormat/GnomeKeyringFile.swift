public import SecretCrypto

/// Reads the keyring files of gnome-keyring (`~/.local/share/keyrings/NAME.keyring`) with no
/// gnome-keyring running: the encrypted binary format (version 0) of a keyring with a password,
/// and the plain key file of one without.
///
/// Both are read as gnome-keyring 42 reads them; see GnomeKeyringFile+Binary.swift and
/// GnomeKeyringFile+KeyFile.swift for the layouts.
public enum GnomeKeyringFile {
    /// The file name ending gnome-keyring gives its keyrings.
    public static let fileExtension = "keyring"

    /// Whether `data` is an encrypted (binary) keyring, which needs a password to read.
    public static func isEncrypted(_ data: [UInt8]) -> Bool {
        data.starts(with: binaryMagic)
    }

    /// Reads the keyring `name` from `data`, the whole file; `password` opens an encrypted one
    /// (an empty password is a valid one) and is ignored for a key file.
    public static func read(_ data: [UInt8], name: String, password: SecureBytes?) throws(GnomeKeyringError) -> GnomeKeyring {
        if isEncrypted(data) { return try readBinary(data, name: name, password: password) }
        return try readKeyFile(data, name: name)
    }

    /// The schema gnome-keyring shows as `xdg:schema` for an item without one, from the item
    /// type of its old API (gnome-keyring's `gkm_secret_compat_format_item_type`).
    static func schema(ofItemType type: UInt32) -> String? {
        switch type & 0xffff {
        case 0: "org.freedesktop.Secret.Generic"
        case 1: "org.gnome.keyring.NetworkPassword"
        case 2: "org.gnome.keyring.Note"
        case 3: "org.gnome.keyring.ChainedKeyring"
        case 4: "org.gnome.keyring.EncryptionKey"
        case 0x100: "org.gnome.keyring.PkStorage"
        default: nil
        }
    }

    /// The attribute that names an item's schema.
    public static let schemaAttribute = "xdg:schema"

    /// The prefix of the attributes gnome-keyring adds over D-Bus as its own bookkeeping
    /// (`gkr:compat:uint32:NAME` marks NAME as an integer); they are not the item's, and its
    /// files do not hold them as attributes.
    public static let bookkeepingAttributePrefix = "gkr:compat:"
}
