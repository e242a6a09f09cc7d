internal import CLoginControl
public import SecretCrypto

/// One request of the login control protocol (Sources/CLoginControl/login-control.h), which
/// pam_secretd.so speaks to hand secretd the login password. Passwords are copied into secure
/// memory straight from the frame; nothing here logs.
public enum LoginControlRequest {
    /// Unlock the login keyring with the login password, creating the keyring if there is none.
    case unlock(password: SecureBytes)
    /// The login password changed: re-wrap the login keyring. `old` is empty when the password
    /// was set without the old one (root running `passwd USER`).
    case change(old: SecureBytes, new: SecureBytes)
    /// Nothing: a connection that only starts secretd.
    case ping

    /// The operation's name in login-control.h, for the log (never a password).
    public var operationName: String {
        switch self {
        case .unlock: return "UNLOCK"
        case .change(let old, _): return old.count == 0 ? "CHANGE without the old password" : "CHANGE"
        case .ping: return "PING"
        }
    }

    /// Why a frame was refused (never containing its bytes).
    public enum ParseError: Error, Equatable {
        /// Fewer bytes than the frame says, or than its header needs, so far.
        case incomplete
        /// Not a frame of this protocol: a bad length, an unknown operation, a string running past
        /// the frame, too many or too few strings, a password over the limit.
        case malformed(String)
    }

    /// The longest password a frame may carry (KeychainLimits.passwordSize, checked by LoginControlTests).
    public static let maximumPasswordLength = Int(SECRETD_CONTROL_MAX_PASSWORD)
    /// The longest frame a peer may send.
    public static let maximumFrameLength = Int(SECRETD_CONTROL_MAX_FRAME)

    /// The frame length its first four bytes announce, once they have arrived.
    public static func announcedLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        bytes.count >= 4 ? Int(readUInt32(bytes, at: 0)) : nil
    }

    /// Parses one whole frame.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(ParseError) -> LoginControlRequest {
        guard bytes.count >= 8 else { throw .incomplete }
        let length = Int(readUInt32(bytes, at: 0))
        guard length >= 8, length <= maximumFrameLength else { throw .malformed("frame length \(length) out of range") }
        guard bytes.count >= length else { throw .incomplete }
        guard bytes.count == length else { throw .malformed("bytes after the frame") }
        let operation = readUInt32(bytes, at: 4)
        var strings: [SecureBytes] = []
        var offset = 8
        while offset < length {
            guard length - offset >= 4 else { throw .malformed("a string length runs past the frame") }
            let count = Int(readUInt32(bytes, at: offset))
            offset += 4
            guard count <= Int(SECRETD_CONTROL_MAX_PASSWORD) else { throw .malformed("a password over the limit") }
            guard count <= length - offset else { throw .malformed("a string runs past the frame") }
            strings.append(SecureBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])))
            offset += count
        }
        switch (operation, strings.count) {
        case (SECRETD_CONTROL_UNLOCK.rawValue, 1): return .unlock(password: strings[0])
        case (SECRETD_CONTROL_CHANGE.rawValue, 2): return .change(old: strings[0], new: strings[1])
        case (SECRETD_CONTROL_PING.rawValue, 0): return .ping
        case (SECRETD_CONTROL_UNLOCK.rawValue, _), (SECRETD_CONTROL_CHANGE.rawValue, _), (SECRETD_CONTROL_PING.rawValue, _):
            throw .malformed("operation \(operation) with \(strings.count) strings")
        default:
            throw .malformed("unknown operation \(operation)")
        }
    }

    /// The frame of this request, as pam_secretd.so writes it; for tests and fuzzing only (the
    /// passwords land in ordinary memory).
    package var frame: [UInt8] {
        let (operation, strings): (UInt32, [SecureBytes])
        switch self {
        case .unlock(let password): (operation, strings) = (SECRETD_CONTROL_UNLOCK.rawValue, [password])
        case .change(let old, let new): (operation, strings) = (SECRETD_CONTROL_CHANGE.rawValue, [old, new])
        case .ping: (operation, strings) = (SECRETD_CONTROL_PING.rawValue, [])
        }
        func bigEndian(_ value: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xff) } }
        var body = bigEndian(operation)
        for string in strings { body += bigEndian(UInt32(string.count)) + string.withBytes { Array($0) } }
        return bigEndian(UInt32(4 + body.count)) + body
    }

    private static func readUInt32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        (UInt32(bytes[offset]) << 24) | (UInt32(bytes[offset + 1]) << 16) | (UInt32(bytes[offset + 2]) << 8)
            | UInt32(bytes[offset + 3])
    }
}

/// secretd's answer to a login control request.
public enum LoginControlResult: Equatable {
    /// Done: unlocked, created, re-wrapped, or nothing to do.
    case ok
    /// The password does not open the login keyring; nothing changed.
    case denied
    /// Refused or impossible; nothing changed.
    case failed

    /// The reply frame: length 8, then the result code.
    public var frame: [UInt8] {
        let code: UInt32
        switch self {
        case .ok: code = SECRETD_CONTROL_OK.rawValue
        case .denied: code = SECRETD_CONTROL_DENIED.rawValue
        case .failed: code = SECRETD_CONTROL_FAILED.rawValue
        }
        return [0, 0, 0, 8] + [UInt8(code >> 24), UInt8((code >> 16) & 0xff), UInt8((code >> 8) & 0xff), UInt8(code & 0xff)]
    }
}
