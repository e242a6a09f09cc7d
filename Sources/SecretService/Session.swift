// org.freedesktop.Secret.Session

package import SecretCrypto
package import DBusValues
package import SecretStore

/// A client's transfer session: how secrets are encoded between it and the daemon.
package final class Session {
    /// The negotiated algorithm.
    package enum Algorithm: Sendable {
        /// Secrets travel as they are.
        case plain
        /// `dh-ietf1024-sha256-aes128-cbc-pkcs7`: AES-128-CBC under a DH-derived key.
        case diffieHellman(key: SecureBytes)
    }

    /// The unique bus name of the client that opened it; nobody else may use it.
    package let owner: String
    /// The algorithm, with its key.
    package let algorithm: Algorithm
    /// When the client last used it, on the daemon's use clock (the least recently used session
    /// of a client at its limit is closed to make room).
    var lastUsed: UInt64 = 0

    /// A session of `owner` with `algorithm`.
    package init(owner: String, algorithm: Algorithm) {
        self.owner = owner
        self.algorithm = algorithm
    }

    /// Opens a session for `algorithm` with the client's `input`; returns it and the output
    /// to send back.
    package static func open(algorithm: String, input: DBusValue, owner: String) -> Result<(Session, DBusValue), SecretServiceError> {
        switch algorithm {
        case "plain":
            return .success((Session(owner: owner, algorithm: .plain), .variant(.string(""))))
        case "dh-ietf1024-sha256-aes128-cbc-pkcs7":
            guard let peer = input.bytes?.array else { return .failure(.invalidArgs("the DH input must be a byte array")) }
            let pair = Gcrypt.DiffieHellman()
            do {
                let key = try pair.sessionKey(peerPublicKey: peer)
                return .success((Session(owner: owner, algorithm: .diffieHellman(key: key)), .variant(.bytes(DBusBytes(pair.publicKey)))))
            } catch {
                return .failure(.invalidArgs(error.description))
            }
        default:
            return .failure(.notSupported("the session algorithm '\(algorithm)' is not supported"))
        }
    }

    /// Encodes an item's secret for this session as the `(oayays)` struct, with the content
    /// type clients are answered (``SecretContentType/answered(_:for:)``).
    package func encode(_ contents: ItemContents, sessionPath: String) -> Result<DBusValue, SecretServiceError> {
        encodedParts(contents).map { .tuple([.objectPath(sessionPath), .bytes($0.parameters), .bytes($0.value), .string($0.contentType)]) }
    }

    /// Encodes a secret for this session as the `(oayays)` struct.
    package func encode(_ secret: SecureBytes, contentType: String, sessionPath: String) -> Result<DBusValue, SecretServiceError> {
        encodedParts(secret).map { .tuple([.objectPath(sessionPath), .bytes($0.parameters), .bytes($0.value), .string(contentType)]) }
    }

    /// ``encode(_:sessionPath:)``'s parts without the session's path: the parameters, the value
    /// and the content type (`ReadPackedItems` packs them).
    package func encodedParts(_ contents: ItemContents)
        -> Result<(parameters: DBusBytes, value: DBusBytes, contentType: String), SecretServiceError>
    {
        encodedParts(contents.secret).map { ($0.parameters, $0.value, SecretContentType.answered(contents.contentType, for: contents.secret)) }
    }

    /// `secret` encoded for this session: the parameters (an IV, or none) and the value.
    private func encodedParts(_ secret: SecureBytes) -> Result<(parameters: DBusBytes, value: DBusBytes), SecretServiceError> {
        switch algorithm {
        case .plain:
            return .success((DBusBytes([]), secret.withBytes { DBusBytes(copying: $0) }))
        case .diffieHellman(let key):
            let iv = Gcrypt.randomBytes(count: 16)
            do {
                return .success((DBusBytes(iv), DBusBytes(try Gcrypt.encryptAES128CBC(secret, key: key, iv: iv))))
            } catch {
                return .failure(.failed("cannot encrypt the secret for the session"))
            }
        }
    }

    /// Decodes the value of a `(oayays)` struct sent in this session.
    package func decode(parameters: DBusBytes, value: DBusBytes) -> Result<SecureBytes, SecretServiceError> {
        algorithm.decode(parameters: parameters, value: value)
    }
}

extension Session.Algorithm {
    /// Decodes the value of a `(oayays)` struct sent in a session of this algorithm: copies
    /// it into locked memory, or decrypts it there.
    package func decode(parameters: DBusBytes, value: DBusBytes) -> Result<SecureBytes, SecretServiceError> {
        switch self {
        case .plain:
            guard parameters.isEmpty else { return .failure(.invalidArgs("a plain session takes no secret parameters")) }
            return .success(value.withUnsafeBytes { SecureBytes(copying: $0) })
        case .diffieHellman(let key):
            guard parameters.count == 16 else { return .failure(.invalidArgs("the secret's IV must be 16 bytes")) }
            do {
                return .success(try Gcrypt.decryptAES128CBC(value.array, key: key, iv: parameters.array))
            } catch {
                return .failure(.invalidArgs("the secret cannot be decrypted with this session"))
            }
        }
    }
}
