/// Why a KWallet file could not be read. None of them names a secret.
public enum KWalletError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file does not start with KWallet's magic bytes.
    case notAWallet
    /// A wallet of a version, cipher or hash this reader does not know, or one encrypted with
    /// GPG (the reason says which).
    case unsupported(String)
    /// The wallet's key is derived with its salt file (`NAME.salt`), and there is none.
    case saltRequired
    /// The password does not open the wallet (or the salt file is not its own).
    case wrongPassword
    /// The file ends early or holds something its format does not allow.
    case damaged(String)

    public var description: String {
        switch self {
        case .notAWallet: "not a KWallet file"
        case .unsupported(let why): "a KWallet file this secretctl cannot read: \(why)"
        case .saltRequired: "its salt file (NAME.salt, beside NAME.kwl) is missing, and the key cannot be derived without it"
        case .wrongPassword: "wrong password (or a salt file that is not this wallet's)"
        case .damaged(let why): "the wallet file is damaged: \(why)"
        }
    }
}
