public import SecretCrypto

/// Reads keyring files with none of their programs running: gnome-keyring's
/// (`~/.local/share/keyrings/NAME.keyring`), the encrypted binary format (version 0) of a
/// keyring with a password and the plain key file of one without, read as gnome-keyring 42
/// reads them; and version 1, written by oo7 (`~/.local/share/keyrings/v1/NAME.keyring`) and
/// libsecret's file backend (a Flatpak app's `default.keyring`), told from version 0 by its
/// version byte. See GnomeKeyringFile+Binary.swift, +KeyFile.swift and +Version1.swift for the
/// layouts.
public enum GnomeKeyringFile {
    /// The file name ending gnome-keyring gives its keyrings.
    public static let fileExtension = "keyring"

    /// Whether `data` is an encrypted (binary, version 0 or 1) keyring, which needs a password to read.
    public static func isEncrypted(_ data: [UInt8]) -> Bool {
        data.starts(with: binaryMagic)
    }

    /// Reads the keyring `name` from `data`, the whole file; `password` opens an encrypted one
    /// (an empty password is a valid one) and is ignored for a key file.
    public static func read(_ data: [UInt8], name: String, password: SecureBytes?) throws(GnomeKeyringError) -> GnomeKeyring {
        if isVersion1(data) { return try readVersion1(data, name: name, password: password) }
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
