public import SecretCrypto

/// A collection's master key as its password locks it: the wrapped key and how the password's
/// key is derived (Argon2id). A value, so that the slow part of opening a collection, the key
/// derivation, runs on any thread while the database stays with its own
/// (``Store/passwordLock(of:)`` reads it, ``Store/unlock(_:master:)`` takes the result back).
public struct PasswordLock: Sendable {
    /// The collection's random identity, which the wrapped key is bound to.
    let uuid: [UInt8]
    /// The wrapping.
    let wrapped: WrappedKey

    /// The master key, when `password` opens it; `.wrongPassword` when it does not (a wrong
    /// password and a tampered wrapped key look the same to GCM). Any thread.
    public func open(with password: SecureBytes) throws(StoreError) -> SecureBytes {
        guard password.count > 0 else { throw .wrongPassword }
        let kek = try StoreError.fromCrypto { () throws(CryptoError) in
            try password.withBytes { (bytes) throws(CryptoError) in
                try Gcrypt.argon2id(password: bytes, salt: wrapped.salt, parameters: wrapped.parameters)
            }
        }
        let key: SecureBytes
        do {
            key = try Gcrypt.open(wrapped.bytes, key: kek, associatedData: Self.associatedData(uuid))
        } catch {
            if error == .authenticationFailed { throw .wrongPassword }
            throw StoreError(error)
        }
        guard key.count == Gcrypt.keyLength else { throw .corrupted("wrapped key has the wrong size") }
        return key
    }

    /// A new wrapping (new salt) of `masterKey` under `password`. Any thread.
    public func rewrapping(_ masterKey: SecureBytes, under password: SecureBytes, parameters: KDFParameters) throws(StoreError)
        -> WrappedKey
    {
        try WrappedKey(wrapping: masterKey, under: password, parameters: parameters, uuid: uuid)
    }

    /// Associated data binding a wrapped master key to its collection.
    static func associatedData(_ uuid: [UInt8]) -> [UInt8] {
        Array("secretd-collection-key-v1".utf8) + uuid
    }
}

/// A master key wrapped under a password: the salt and cost of the password's key, and the
/// sealed key, as a collection's row keeps them.
public struct WrappedKey: Sendable {
    /// The Argon2id salt.
    let salt: [UInt8]
    /// The Argon2id cost.
    let parameters: KDFParameters
    /// The sealed master key.
    let bytes: [UInt8]

    init(salt: [UInt8], parameters: KDFParameters, bytes: [UInt8]) {
        self.salt = salt
        self.parameters = parameters
        self.bytes = bytes
    }

    /// Wraps `masterKey` under `password` with a new salt, bound to collection `uuid`.
    package init(wrapping masterKey: SecureBytes, under password: SecureBytes, parameters: KDFParameters, uuid: [UInt8]) throws(StoreError) {
        guard password.count > 0 else { throw .invalidInput("the password is empty") }
        let salt = Gcrypt.randomBytes(count: 16)
        let sealed = try StoreError.fromCrypto { () throws(CryptoError) in
            let kek = try password.withBytes { (bytes) throws(CryptoError) in
                try Gcrypt.argon2id(password: bytes, salt: salt, parameters: parameters)
            }
            return try masterKey.withBytes { (bytes) throws(CryptoError) in
                try Gcrypt.seal(bytes, key: kek, associatedData: PasswordLock.associatedData(uuid))
            }
        }
        self.init(salt: salt, parameters: parameters, bytes: sealed)
    }
}

/// What a new collection starts with: a random identity and master key, the key wrapped under
/// the collection's password. Made on any thread (``init(password:parameters:)`` derives the
/// password's key), then written by ``Store/createCollection(name:label:key:times:)``.
public struct NewCollectionKey: Sendable {
    /// The collection's random identity.
    let uuid: [UInt8]
    /// Its master key.
    let masterKey: SecureBytes
    /// The master key wrapped under the password.
    let wrapped: WrappedKey

    /// A fresh identity and master key, wrapped under `password`.
    public init(password: SecureBytes, parameters: KDFParameters) throws(StoreError) {
        uuid = Gcrypt.randomBytes(count: 16)
        masterKey = Gcrypt.randomKey()
        wrapped = try WrappedKey(wrapping: masterKey, under: password, parameters: parameters, uuid: uuid)
    }
}
