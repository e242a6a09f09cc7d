package import SecretCrypto

/// The content type a secret is answered with (`GetSecret`, `GetSecrets`, `SearchItems`'s
/// secrets through libsecret), beside the one it was stored with, which is kept as sent.
///
/// libsecret reads a secret as text only when its content type is exactly `text/plain` (or
/// empty or `application/octet-stream` with UTF-8 bytes): `secret-tool lookup`, Python
/// `keyring` through libsecret and every `secret_password_lookup` then say "secret does not
/// contain a textual password" for a password that go-keyring stored as
/// `text/plain; charset=utf8`. gnome-keyring answers `text/plain` for everything. So a
/// `text/plain` with parameters (any case, any spacing) whose bytes are valid UTF-8 is
/// answered as `text/plain`; any other type (binary data, a `text/plain` whose bytes are in
/// another charset) is answered as stored.
package enum SecretContentType {
    /// libsecret's text type.
    package static let text = "text/plain"

    /// What a secret stored with `stored` is answered with.
    package static func answered(_ stored: String, for secret: SecureBytes) -> String {
        guard stored != text, isTextWithParameters(stored) else { return stored }
        return secret.withBytes(isValidUTF8) ? text : stored
    }

    /// Whether `type` is `text/plain` followed by `;` and parameters.
    static func isTextWithParameters(_ type: String) -> Bool {
        guard let semicolon = type.firstIndex(of: ";") else { return false }
        let isSpace = { (character: Character) in character == " " || character == "\t" }
        let mediaType = type[..<semicolon].drop(while: isSpace).reversed().drop(while: isSpace).reversed()
        return String(mediaType).lowercased() == text
    }

    /// Whether `bytes` are valid UTF-8, checked without copying them into a `String`.
    static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
