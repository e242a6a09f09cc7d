// The only file that calls libgcrypt. Every function here works on secure memory for keys and
// plaintext; ciphertext, salts and nonces are ordinary arrays.

internal import CGcrypt
import Foundation

/// libgcrypt: initialisation, randomness, Argon2id, AES-256-GCM and SHA-256.
public enum Gcrypt {
    /// Length of an AES-GCM nonce.
    static let nonceLength = 12
    /// Length of an AES-GCM tag.
    static let tagLength = 16
    /// Length of AES-256 keys.
    public static let keyLength = 32

    private static let initialization: String? = {
        if keychain_gcry_is_initialized() != 0 { return String(cString: gcry_check_version(nil)) }
        return keychain_gcry_initialize(1 << 20).map { String(cString: $0) }
    }()

    /// Initialises libgcrypt (secure memory, 1 MiB pool that may grow) once per process;
    /// call it before starting threads.
    @discardableResult
    public static func initialize() -> String {
        guard let version = initialization else { fatalError("libgcrypt is older than its headers") }
        return version
    }

    // MARK: - Randomness

    /// `count` bytes from the strong random generator, in secure memory (for keys).
    public static func randomKey(count: Int = keyLength) -> SecureBytes {
        let key = SecureBytes(count: count)
        key.withMutableBytes { gcry_randomize($0.baseAddress, count, GCRY_STRONG_RANDOM) }
        return key
    }

    /// `count` unpredictable bytes for salts and nonces.
    public static func randomBytes(count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { gcry_create_nonce($0.baseAddress, count) }
        return bytes
    }

    // MARK: - Argon2id

    /// Derives a 32-byte key from `password` and `salt` with Argon2id.
    public static func argon2id(
        password: UnsafeRawBufferPointer, salt: [UInt8], parameters: KDFParameters
    ) throws(StoreError) -> SecureBytes {
        try argon2id(password: password, salt: salt, parameters: parameters, secret: [], associatedData: [])
    }

    /// Argon2id with the optional secret (K) and associated data (X) inputs; known-answer
    /// tests use them (RFC 9106 §5.3).
    static func argon2id(
        password: UnsafeRawBufferPointer, salt: [UInt8], parameters: KDFParameters, secret: [UInt8],
        associatedData: [UInt8]
    ) throws(StoreError) -> SecureBytes {
        initialize()
        var handle: gcry_kdf_hd_t?
        let costs: [UInt] = [UInt(keyLength), UInt(parameters.iterations), UInt(parameters.memoryKiB), UInt(parameters.lanes)]
        let empty: [UInt8] = [0]
        var error = salt.withUnsafeBytes { saltBytes in
            costs.withUnsafeBufferPointer { costBuffer in
                secret.withUnsafeBytes { secretBytes in
                    associatedData.withUnsafeBytes { adBytes in
                        empty.withUnsafeBytes { emptyBytes in
                            gcry_kdf_open(
                                &handle, Int32(GCRY_KDF_ARGON2.rawValue), Int32(GCRY_KDF_ARGON2ID.rawValue),
                                costBuffer.baseAddress, UInt32(costBuffer.count),
                                password.baseAddress ?? emptyBytes.baseAddress, password.count,
                                saltBytes.baseAddress, saltBytes.count,
                                secret.isEmpty ? nil : secretBytes.baseAddress, secret.count,
                                associatedData.isEmpty ? nil : adBytes.baseAddress, associatedData.count)
                        }
                    }
                }
            }
        }
        guard error == 0, let handle else { throw .crypto("argon2id: \(describe(error))") }
        defer { gcry_kdf_close(handle) }
        error = gcry_kdf_compute(handle, nil)
        guard error == 0 else { throw .crypto("argon2id: \(describe(error))") }
        let key = SecureBytes(count: keyLength)
        error = key.withMutableBytes { gcry_kdf_final(handle, keyLength, $0.baseAddress) }
        guard error == 0 else { throw .crypto("argon2id: \(describe(error))") }
        return key
    }

    // MARK: - AES-256-GCM

    /// Encrypts `plaintext` under `key`, authenticating `associatedData` too; returns
    /// nonce ‖ ciphertext ‖ tag with a fresh random nonce.
    public static func seal(
        _ plaintext: UnsafeRawBufferPointer, key: SecureBytes, associatedData: [UInt8]
    ) throws(StoreError) -> [UInt8] {
        try seal(plaintext, key: key, associatedData: associatedData, nonce: randomBytes(count: nonceLength))
    }

    /// Sealing with a given nonce, for known-answer tests only: a nonce must never repeat.
    static func seal(
        _ plaintext: UnsafeRawBufferPointer, key: SecureBytes, associatedData: [UInt8], nonce: [UInt8]
    ) throws(StoreError) -> [UInt8] {
        let cipher = try openCipher(key: key, nonce: nonce, associatedData: associatedData)
        defer { gcry_cipher_close(cipher) }
        var output = [UInt8](repeating: 0, count: nonceLength + plaintext.count + tagLength)
        let error: gcry_error_t = output.withUnsafeMutableBytes { out in
            nonce.withUnsafeBytes { out.copyMemory(from: $0) }
            let body = out.baseAddress! + nonceLength
            if plaintext.count > 0 {
                let status = gcry_cipher_encrypt(cipher, body, plaintext.count, plaintext.baseAddress, plaintext.count)
                if status != 0 { return status }
            } else {
                let status = gcry_cipher_ctl(cipher, Int32(GCRYCTL_FINALIZE.rawValue), nil, 0)
                if status != 0 { return status }
            }
            return gcry_cipher_gettag(cipher, body + plaintext.count, tagLength)
        }
        guard error == 0 else { throw .crypto("aes-gcm seal: \(describe(error))") }
        return output
    }

    /// Decrypts what ``seal(_:key:associatedData:)`` produced; `.corrupted` when the tag, the
    /// key or the associated data do not match.
    public static func open(
        _ sealed: [UInt8], key: SecureBytes, associatedData: [UInt8]
    ) throws(StoreError) -> SecureBytes {
        guard sealed.count >= nonceLength + tagLength else { throw .corrupted("sealed value is truncated") }
        let length = sealed.count - nonceLength - tagLength
        let cipher = try openCipher(key: key, nonce: Array(sealed[0..<nonceLength]), associatedData: associatedData)
        defer { gcry_cipher_close(cipher) }
        let plaintext = SecureBytes(count: length)
        let error: gcry_error_t = sealed.withUnsafeBytes { input in
            plaintext.withMutableBytes { out in
                let body = input.baseAddress! + nonceLength
                if length > 0 {
                    let status = gcry_cipher_decrypt(cipher, out.baseAddress, length, body, length)
                    if status != 0 { return status }
                } else {
                    let status = gcry_cipher_ctl(cipher, Int32(GCRYCTL_FINALIZE.rawValue), nil, 0)
                    if status != 0 { return status }
                }
                return gcry_cipher_checktag(cipher, body + length, tagLength)
            }
        }
        if error != 0 {
            if gcry_err_code(error) == GPG_ERR_CHECKSUM { throw .corrupted("authentication failed") }
            throw .crypto("aes-gcm open: \(describe(error))")
        }
        return plaintext
    }

    private static func openCipher(
        key: SecureBytes, nonce: [UInt8], associatedData: [UInt8]
    ) throws(StoreError) -> gcry_cipher_hd_t {
        initialize()
        guard key.count == keyLength else { throw .crypto("AES-256 needs a 32-byte key") }
        var handle: gcry_cipher_hd_t?
        var error = gcry_cipher_open(
            &handle, Int32(GCRY_CIPHER_AES256.rawValue), Int32(GCRY_CIPHER_MODE_GCM.rawValue),
            UInt32(GCRY_CIPHER_SECURE.rawValue))
        guard error == 0, let handle else { throw .crypto("aes-gcm: \(describe(error))") }
        error = key.withBytes { gcry_cipher_setkey(handle, $0.baseAddress, $0.count) }
        if error == 0 { error = nonce.withUnsafeBytes { gcry_cipher_setiv(handle, $0.baseAddress, $0.count) } }
        if error == 0 {
            error = associatedData.withUnsafeBytes { gcry_cipher_authenticate(handle, $0.baseAddress, $0.count) }
        }
        guard error == 0 else {
            gcry_cipher_close(handle)
            throw .crypto("aes-gcm: \(describe(error))")
        }
        return handle
    }

    // MARK: - Hashing

    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        initialize()
        var digest = [UInt8](repeating: 0, count: 32)
        digest.withUnsafeMutableBytes { out in
            bytes.withUnsafeBytes { input in
                gcry_md_hash_buffer(Int32(GCRY_MD_SHA256.rawValue), out.baseAddress, input.baseAddress, input.count)
            }
        }
        return digest
    }

    private static func describe(_ error: gcry_error_t) -> String {
        String(cString: gcry_strerror(error))
    }
}
