// A secret as a client sent it, checked but not yet decoded.

import DBusValues
import KeychainCore
import SecretCrypto
import SecretStore

/// A `(oayays)` secret a client sent, checked against its session and the size limit but not
/// yet decoded: decoding copies it into locked memory (and decrypts it, in an encrypted
/// session), which for a large item is done off the main loop (``SealingQueue``).
struct SentSecret: Sendable {
    /// The algorithm of the session it was sent in, with its key.
    let algorithm: Session.Algorithm
    /// The parameters (an encrypted session's IV).
    let parameters: DBusBytes
    /// The value as sent.
    let value: DBusBytes
    /// Its content type: `text/plain` when the client gave none.
    let contentType: String

    /// The secret's size as sent: an encrypted one's is up to 16 bytes more than it will have.
    var byteCount: Int { value.count }

    /// An item's contents with `label`, `attributes` and this secret, decoded.
    func contents(label: String, attributes: [String: String]) -> Result<ItemContents, SecretServiceError> {
        decode().map { ItemContents(label: label, attributes: attributes, secret: $0, contentType: contentType) }
    }

    /// Gives `contents` this secret, decoded, and its content type; or says why it cannot.
    func replaceSecret(in contents: inout ItemContents) -> SecretServiceError? {
        switch decode() {
        case .success(let decoded):
            contents.secret = decoded
            contents.contentType = contentType
            return nil
        case .failure(let refusal):
            return refusal
        }
    }

    /// The secret in locked memory, or why it cannot be had.
    func decode() -> Result<SecureBytes, SecretServiceError> {
        algorithm.decode(parameters: parameters, value: value).flatMap { secret in
            secret.count <= KeychainLimits.secretSize
                ? .success(secret) : .failure(.invalidArgs("the secret is larger than \(KeychainLimits.secretSize) bytes"))
        }
    }
}
