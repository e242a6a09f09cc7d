/// An account and its password, as the login flow hands them to `authenticate` and as a
/// ``LoginPrompter`` returns them.
///
/// The password lives in a private buffer that is wiped when the last reference goes away;
/// ``withPasswordBytes(_:)`` reads it without making a copy. ``password`` makes a Swift `String`
/// copy, which cannot be wiped: prefer the bytes when the consumer takes bytes. The description
/// never shows the password.
public final class LoginCredential: @unchecked Sendable, CustomStringConvertible {
    // Sendable: both stored properties are immutable after init, and the buffer is only read.

    /// The account name.
    public let account: String
    private let secret: SecretBuffer

    /// A credential holding a private copy of `password`'s UTF-8 bytes.
    public init(account: String, password: String) {
        self.account = account
        var copy = password
        secret = copy.withUTF8 { SecretBuffer(copying: UnsafeRawBufferPointer($0)) }
    }

    /// A credential holding a private copy of `passwordBytes` (for example read from a terminal
    /// or from pinentry); the caller may wipe its own buffer right after.
    public init(account: String, passwordBytes: UnsafeRawBufferPointer) {
        self.account = account
        secret = SecretBuffer(copying: passwordBytes)
    }

    /// The password as text (invalid UTF-8 is repaired with U+FFFD). This is a copy the
    /// library cannot wipe; see ``withPasswordBytes(_:)``.
    public var password: String { String(decoding: secret.view, as: UTF8.self) }

    /// Calls `body` with the password's bytes; they are valid only during the call.
    public func withPasswordBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(secret.view)
    }

    /// Whether the password equals `bytes`, comparing every byte (no early exit).
    func hasPassword(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let own = secret.view
        guard own.count == bytes.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<own.count { difference |= own[index] ^ bytes[index] }
        return difference == 0
    }

    /// The buffer the library hands to libsecret when it stores the credential.
    var buffer: SecretBuffer { secret }

    /// `account` only; the password is never part of a description.
    public var description: String { "LoginCredential(account: \(account))" }
}
