/// What can go wrong in a cryptographic operation. Messages never contain keys or plaintext.
public enum CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An input the operation refuses: a key, IV or public value of the wrong size or range,
    /// bad padding, or key-derivation parameters outside ``KDFParameters/isWithinLimits``.
    case invalidInput(String)
    /// A sealed value is truncated or malformed.
    case corrupted(String)
    /// A sealed value failed its authentication tag: altered, or opened with the wrong key or
    /// associated data (for a key wrapped under a password: the wrong password).
    case authenticationFailed
    /// libgcrypt reported an error, or is unusable.
    case library(String)

    /// A one-line description.
    public var description: String {
        switch self {
        case .invalidInput(let what): return "invalid input: \(what)"
        case .corrupted(let what): return "sealed data is corrupted: \(what)"
        case .authenticationFailed: return "sealed data is corrupted: authentication failed"
        case .library(let message): return "crypto error: \(message)"
        }
    }
}
