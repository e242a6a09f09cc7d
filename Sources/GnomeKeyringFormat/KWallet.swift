public import SecretCrypto

/// A KWallet wallet as its file holds it (``KWalletFile``): its folders and their entries,
/// which `secretctl import kwallet` carries over into secretd.
public struct KWallet: Sendable {
    /// Every folder, in the file's order, those without entries too.
    public var folders: [String]
    /// The entries of every folder, in the file's order.
    public var entries: [Entry]

    /// What an entry holds (KWallet's `Wallet::EntryType`).
    public enum EntryType: Int32, Sendable {
        /// Text (`readPassword`); its value is a serialized QString.
        case password = 1
        /// Bytes (`readEntry`), as the application wrote them.
        case stream = 2
        /// Names and values (`readMap`); its value is a serialized `QMap<QString, QString>`.
        case map = 3
    }

    /// One entry of a folder.
    public struct Entry: Sendable {
        /// The folder it is in (`Passwords`, `Form Data`, an application's name).
        public var folder: String
        /// Its key, unique in its folder.
        public var key: String
        public var type: EntryType
        /// What a Secret Service client gets for it, as KWallet's own bridge (ksecretd) gives
        /// it: a password's text in UTF-8, a stream's bytes, a map as a compact JSON object
        /// whose names are sorted.
        public var secret: SecureBytes
    }
}
