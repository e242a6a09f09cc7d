/// Everything that can go wrong in a keychain call; a missing item is `nil`, not an error.
///
/// The enum is closed so a caller can `switch` over it. No case ever carries a secret:
/// descriptions name the field or the provider's message, never a stored value.
public enum KeychainError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The keyring holding the item is locked and was not unlocked (no prompt could be shown,
    /// or the unlock prompt was dismissed).
    case locked
    /// The user dismissed a prompt shown for this call: the provider's, or the login flow's
    /// (see ``Keychain/login(account:remember:prompt:maximumPrompts:authenticate:)``).
    case cancelled
    /// The provider refused this caller access to the item or collection.
    case accessDenied(message: String)
    /// No Secret Service provider could be reached: no session bus, or nobody owns
    /// `org.freedesktop.secrets` on it. `reason` says which.
    case noProvider(reason: String)
    /// The login flow had to ask the user for a credential and had no way to: no terminal and
    /// no pinentry, for example. `reason` says what was tried. Thrown at once, never after a wait.
    case noPrompter(reason: String)
    /// The call's arguments were rejected before anything was sent to the provider.
    case invalidInput(InvalidInput)
    /// The stored value is not of the requested type (for example not UTF-8 text, or JSON that
    /// does not decode to the requested `Decodable` type).
    case unexpectedData(reason: String)
    /// No keyring has this alias (`default`, `session`, or a name given to `secretctl`).
    case noSuchKeyring(alias: String)
    /// The provider does not offer this (for example access groups, which only secretd has).
    case notSupported(feature: String)
    /// The provider's reply did not follow the Secret Service protocol (a missing reply, or one
    /// of the wrong type); `reason` says what was wrong.
    case protocolError(reason: String)
    /// Any other error from libsecret or the provider, with its GLib domain, code and message.
    case backend(domain: String, code: Int, message: String)

    /// Why the arguments of a call were rejected.
    public enum InvalidInput: Equatable, Sendable, CustomStringConvertible {
        /// A required text field (service, account, server) was empty.
        case empty(field: String)
        /// A value or field is larger than the library accepts; `limit` is in bytes.
        case tooLarge(field: String, limit: Int)
        /// A text field contains a NUL character, which Secret Service attributes cannot hold.
        case containsNUL(field: String)
        /// A text value could not be encoded as UTF-8 (for example a `Encodable` value that
        /// failed to encode).
        case notEncodable(field: String)

        /// A one-line description naming the field, never its value.
        public var description: String {
            switch self {
            case .empty(let field): return "\(field) must not be empty"
            case .tooLarge(let field, let limit): return "\(field) is larger than \(limit) bytes"
            case .containsNUL(let field): return "\(field) must not contain a NUL character"
            case .notEncodable(let field): return "\(field) could not be encoded"
            }
        }
    }

    /// A one-line description suitable for a log or a terminal; it never contains a secret.
    public var description: String {
        switch self {
        case .locked: return "the keyring is locked"
        case .cancelled: return "the prompt was dismissed"
        case .accessDenied(let message): return "access denied: \(message)"
        case .noProvider(let reason): return "no Secret Service provider: \(reason)"
        case .noPrompter(let reason): return "cannot ask for a credential: \(reason)"
        case .invalidInput(let reason): return "invalid input: \(reason)"
        case .unexpectedData(let reason): return "unexpected data: \(reason)"
        case .noSuchKeyring(let alias): return "no keyring has the alias '\(alias)'"
        case .notSupported(let feature): return "the provider does not support \(feature)"
        case .protocolError(let reason): return "the provider broke the Secret Service protocol: \(reason)"
        // org.freedesktop.DBus.Error.Failed (GDBus's code 0) and LimitsExceeded (8, a quota or a
        // limit of secretd's): the provider's own words say it all.
        case .backend("g-dbus-error-quark", let code, let message) where (code == 0 || code == 8) && !message.isEmpty:
            return message
        case .backend(LibSecret.RemoteError.domain, Int(LibSecret.RemoteError.unusableDatabase.rawValue), let message)
        where !message.isEmpty:
            return message  // secretd's refused database: the message says what to do
        case .backend(let domain, let code, let message): return "\(domain) error \(code): \(message)"
        }
    }
}
