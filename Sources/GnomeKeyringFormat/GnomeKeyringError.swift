/// Why a gnome-keyring file could not be read. None of them names a secret.
public enum GnomeKeyringError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Neither of gnome-keyring's formats (the encrypted binary one, the key file of a keyring
    /// without a password).
    case notAKeyring
    /// A binary keyring of a version, cipher or hash this reader does not know.
    case unsupportedVersion(String)
    /// The file is encrypted and no password was given.
    case passwordRequired
    /// The password does not open the file (its check sum does not match; a file altered in
    /// its encrypted part looks the same).
    case wrongPassword
    /// The file ends early or holds something its format does not allow.
    case damaged(String)

    public var description: String {
        switch self {
        case .notAKeyring: "not a gnome-keyring keyring file"
        case .unsupportedVersion(let version): "a gnome-keyring file of a version this secretctl cannot read (\(version))"
        case .passwordRequired: "the keyring is encrypted and needs its password"
        case .wrongPassword: "wrong password (or the file was altered)"
        case .damaged(let why): "the keyring file is damaged: \(why)"
        }
    }
}
