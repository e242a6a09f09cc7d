// With SecureBytes.swift (its secure memory) and Gcrypt+Signatures.swift (the SSH agent's
// signatures), the only file that calls libgcrypt. Every function
// here works on secure memory for keys and plaintext; ciphertext, salts and nonces are ordinary
// arrays.

internal import CGcrypt
import FoundationEssentials
import Glibc

/// libgcrypt: initialisation, randomness, Argon2id, AES-256-GCM and SHA-256, and what reading a
/// KeePass database needs (Argon2d, AES-KDF, AES-256/Twofish-CBC, ChaCha20, Salsa20).
public enum Gcrypt {
    /// Length of an AES-GCM nonce.
    package static let nonceLength = 12
    /// Length of an AES-GCM tag.
    package static let tagLength = 16
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

    /// Derives a 32-byte key from `password` and `salt` with Argon2id; `.invalidInput` for
    /// parameters that are not ``KDFParameters/isWithinLimits``.
    public static func argon2id(
        password: UnsafeRawBufferPointer, salt: [UInt8], parameters: KDFParameters
    ) throws(CryptoError) -> SecureBytes {
        try argon2id(password: password, salt: salt, parameters: parameters, secret: [], associatedData: [])
    }

    /// Argon2id with the optional secret (K) and associated data (X) inputs; known-answer
    /// tests use them (RFC 9106 §5.3).
    package static func argon2id(
        password: UnsafeRawBufferPointer, salt: [UInt8], parameters: KDFParameters, secret: [UInt8],
        associatedData: [UInt8]
    ) throws(CryptoError) -> SecureBytes {
        guard parameters.isWithinLimits else { throw .invalidInput("Argon2id parameters are out of range") }
        return try argon2(
            Int32(GCRY_KDF_ARGON2ID.rawValue), password: password, salt: salt, parameters: parameters, secret: secret,
            associatedData: associatedData)
    }

    /// The Argon2 variants a KeePass database may name.
    public enum Argon2Variant: Sendable {
        /// Argon2d (KeePassXC's default for KDBX 4).
        case argon2d
        /// Argon2id.
        case argon2id
    }

    /// Argon2d or Argon2id (version 0x13) of a KeePass database's composite key, with the
    /// parameters its header names: a 32-byte key. The caller bounds the parameters (they come
    /// from the file); this only checks that Argon2 can run with them.
    public static func argon2(
        _ variant: Argon2Variant, password: UnsafeRawBufferPointer, salt: [UInt8], parameters: KDFParameters,
        secret: [UInt8] = [], associatedData: [UInt8] = []
    ) throws(CryptoError) -> SecureBytes {
        guard parameters.iterations >= 1, parameters.lanes >= 1, parameters.memoryKiB >= 8 * parameters.lanes else {
            throw .invalidInput("Argon2 parameters are out of range")
        }
        let subalgorithm = variant == .argon2d ? GCRY_KDF_ARGON2D.rawValue : GCRY_KDF_ARGON2ID.rawValue
        return try argon2(
            Int32(subalgorithm), password: password, salt: salt, parameters: parameters, secret: secret, associatedData: associatedData)
    }

    private static func argon2(
        _ subalgorithm: Int32, password: UnsafeRawBufferPointer, salt: [UInt8], parameters: KDFParameters, secret: [UInt8],
        associatedData: [UInt8]
    ) throws(CryptoError) -> SecureBytes {
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
                                &handle, Int32(GCRY_KDF_ARGON2.rawValue), subalgorithm,
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
        guard error == 0, let handle else { throw .library("argon2id: \(describe(error))") }
        defer { gcry_kdf_close(handle) }
        if parameters.lanes > 1 {
            // The lanes of each segment side by side, on threads of their own: the standard
            // parameters took 166-173 ms one lane after another, 122-148 ms so (2 cores; the
            // memory's bandwidth is shared).
            let lanes = LaneThreads()
            var operations = gcry_kdf_thread_ops_t(
                jobs_context: Unmanaged.passUnretained(lanes).toOpaque(), dispatch_job: LaneThreads.dispatch,
                wait_all_jobs: LaneThreads.waitAll)
            error = withExtendedLifetime(lanes) { gcry_kdf_compute(handle, &operations) }
            lanes.joinAll()  // after a failure midway too: no job outlives the handle
        } else {
            error = gcry_kdf_compute(handle, nil)
        }
        guard error == 0 else { throw .library("argon2id: \(describe(error))") }
        let key = SecureBytes(count: keyLength)
        error = key.withMutableBytes { gcry_kdf_final(handle, keyLength, $0.baseAddress) }
        guard error == 0 else { throw .library("argon2id: \(describe(error))") }
        return key
    }

    /// libgcrypt's hooks for running Argon2's jobs on threads: it hands over one job per lane
    /// of a segment (``dispatch``), then waits for them all (``waitAll``), four times a pass.
    /// A job that no thread can be had for runs at once, on the caller's.
    private final class LaneThreads {
        /// The threads of the jobs handed over since the last wait.
        private var running: [pthread_t] = []

        /// One job and its argument, for its thread.
        private typealias Job = (run: gcry_kdf_job_fn_t, argument: UnsafeMutableRawPointer?)

        static let dispatch: gcry_kdf_dispatch_job_fn_t = { context, run, argument in
            guard let context, let run else { return -1 }
            let lanes = Unmanaged<LaneThreads>.fromOpaque(context).takeUnretainedValue()
            let job = UnsafeMutablePointer<Job>.allocate(capacity: 1)
            job.initialize(to: (run, argument))
            var thread = pthread_t()
            let started = pthread_create(&thread, nil, { raw in
                let job = raw!.assumingMemoryBound(to: Job.self)
                let (run, argument) = job.move()
                job.deallocate()
                run(argument)
                return nil
            }, job)
            if started == 0 {
                lanes.running.append(thread)
            } else {
                job.deinitialize(count: 1)
                job.deallocate()
                run(argument)
            }
            return 0
        }

        static let waitAll: gcry_kdf_wait_all_jobs_fn_t = { context in
            guard let context else { return -1 }
            Unmanaged<LaneThreads>.fromOpaque(context).takeUnretainedValue().joinAll()
            return 0
        }

        /// Waits for every job handed over so far.
        func joinAll() {
            for thread in running { pthread_join(thread, nil) }
            running.removeAll()
        }
    }

    // MARK: - AES-256-GCM

    /// Encrypts `plaintext` under `key`, authenticating `associatedData` too; returns
    /// nonce ‖ ciphertext ‖ tag with a fresh random nonce.
    public static func seal(
        _ plaintext: UnsafeRawBufferPointer, key: SecureBytes, associatedData: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        try seal(plaintext, key: key, associatedData: associatedData, nonce: randomBytes(count: nonceLength))
    }

    /// Sealing with a given nonce, for known-answer tests only: a nonce must never repeat.
    package static func seal(
        _ plaintext: UnsafeRawBufferPointer, key: SecureBytes, associatedData: [UInt8], nonce: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: nonceLength + plaintext.count + tagLength)
        try output.withUnsafeMutableBytes { out in
            Result { () throws(CryptoError) in try seal(into: out, from: plaintext.baseAddress, key: key, associatedData: associatedData, nonce: nonce) }
        }.get()
        return output
    }

    /// ``seal(_:key:associatedData:)`` where the plaintext lies, for one too large to copy:
    /// `buffer` is ``nonceLength`` bytes for the nonce, then the plaintext, encrypted where it
    /// is, then ``tagLength`` bytes for the tag; it ends as what `seal` returns.
    public static func sealInPlace(_ buffer: UnsafeMutableRawBufferPointer, key: SecureBytes, associatedData: [UInt8]) throws(CryptoError) {
        try seal(into: buffer, from: nil, key: key, associatedData: associatedData, nonce: randomBytes(count: nonceLength))
    }

    /// ``sealInPlace(_:key:associatedData:)`` with a given nonce, for known-answer tests only.
    package static func sealInPlace(
        _ buffer: UnsafeMutableRawBufferPointer, key: SecureBytes, associatedData: [UInt8], nonce: [UInt8]
    ) throws(CryptoError) {
        try seal(into: buffer, from: nil, key: key, associatedData: associatedData, nonce: nonce)
    }

    /// Seals into `buffer` (nonce, ciphertext, tag) the plaintext at `plaintext`, as long as
    /// `buffer`'s middle; nil: the plaintext is that middle, encrypted in place.
    private static func seal(
        into buffer: UnsafeMutableRawBufferPointer, from plaintext: UnsafeRawPointer?, key: SecureBytes, associatedData: [UInt8],
        nonce: [UInt8]
    ) throws(CryptoError) {
        guard buffer.count >= nonceLength + tagLength, nonce.count == nonceLength else {
            throw .invalidInput("a sealed value has room for its nonce and tag")
        }
        let cipher = try openCipher(key: key, nonce: nonce, associatedData: associatedData)
        defer { gcry_cipher_close(cipher) }
        nonce.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: nonceLength) }
        let body = buffer.baseAddress! + nonceLength
        let length = buffer.count - nonceLength - tagLength
        var error: gcry_error_t
        if length > 0 {
            error = gcry_cipher_encrypt(cipher, body, length, plaintext, plaintext == nil ? 0 : length)
        } else {
            error = gcry_cipher_ctl(cipher, Int32(GCRYCTL_FINALIZE.rawValue), nil, 0)
        }
        if error == 0 { error = gcry_cipher_gettag(cipher, body + length, tagLength) }
        guard error == 0 else { throw .library("aes-gcm seal: \(describe(error))") }
    }

    /// Decrypts what ``seal(_:key:associatedData:)`` produced; `.corrupted` when the tag, the
    /// key or the associated data do not match.
    public static func open(
        _ sealed: [UInt8], key: SecureBytes, associatedData: [UInt8]
    ) throws(CryptoError) -> SecureBytes {
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
            if gcry_err_code(error) == GPG_ERR_CHECKSUM { throw .authenticationFailed }
            throw .library("aes-gcm open: \(describe(error))")
        }
        return plaintext
    }

    private static func openCipher(
        key: SecureBytes, nonce: [UInt8], associatedData: [UInt8]
    ) throws(CryptoError) -> gcry_cipher_hd_t {
        guard key.count == keyLength else { throw .library("AES-256 needs a 32-byte key") }
        let handle = try cipher(GCRY_CIPHER_AES256, GCRY_CIPHER_MODE_GCM, key: key, iv: nonce, what: "aes-gcm")
        let error = associatedData.withUnsafeBytes { gcry_cipher_authenticate(handle, $0.baseAddress, $0.count) }
        guard error == 0 else {
            gcry_cipher_close(handle)
            throw .library("aes-gcm: \(describe(error))")
        }
        return handle
    }

    /// A libgcrypt cipher handle for `algorithm` in `mode`, with `key` set and, when given,
    /// `iv`; the caller closes it. Its state is kept in secure memory unless `secure` is false
    /// (a test's own cipher). `what` names the cipher in errors.
    private static func cipher(
        _ algorithm: gcry_cipher_algos, _ mode: gcry_cipher_modes, key: SecureBytes, iv: [UInt8]? = nil, secure: Bool = true,
        what: String
    ) throws(CryptoError) -> gcry_cipher_hd_t {
        initialize()
        var handle: gcry_cipher_hd_t?
        var error = gcry_cipher_open(&handle, Int32(algorithm.rawValue), Int32(mode.rawValue), secure ? UInt32(GCRY_CIPHER_SECURE.rawValue) : 0)
        guard error == 0, let handle else { throw .library("\(what): \(describe(error))") }
        error = key.withBytes { gcry_cipher_setkey(handle, $0.baseAddress, $0.count) }
        if error == 0, let iv { error = iv.withUnsafeBytes { gcry_cipher_setiv(handle, $0.baseAddress, $0.count) } }
        guard error == 0 else {
            gcry_cipher_close(handle)
            throw .library("\(what): \(describe(error))")
        }
        return handle
    }

    /// `padded` without its PKCS#7 padding (1 to 16 bytes, each the padding's length);
    /// `.invalidInput(invalid)` when it has none.
    private static func removingPadding(_ padded: SecureBytes, invalid: String) throws(CryptoError) -> SecureBytes {
        let padding = padded.withBytes { Int($0[$0.count - 1]) }
        let valid = padded.withBytes { bytes in
            (1...16).contains(padding) && padding <= bytes.count && bytes[(bytes.count - padding)...].allSatisfy { Int($0) == padding }
        }
        guard valid else { throw .invalidInput(invalid) }
        return padded.withBytes { SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0[0..<($0.count - padding)])) }
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

    /// SHA-256 of what is left to read of the open file `descriptor` (an executable, which is
    /// no secret: hashed outside secure memory, a megabyte at a time); nil when a read fails.
    public static func sha256(readingFile descriptor: Int32) -> [UInt8]? {
        initialize()
        var handle: gcry_md_hd_t?
        guard gcry_md_open(&handle, Int32(GCRY_MD_SHA256.rawValue), 0) == 0, let handle else { return nil }
        defer { gcry_md_close(handle) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            buffer.withUnsafeBytes { gcry_md_write(handle, $0.baseAddress, count) }
        }
        return Array(UnsafeRawBufferPointer(start: gcry_md_read(handle, Int32(GCRY_MD_SHA256.rawValue)), count: 32))
    }

    /// SHA-512 of the concatenated `parts` (KDBX's HMAC keys).
    public static func sha512(_ parts: [[UInt8]]) -> [UInt8] {
        initialize()
        var handle: gcry_md_hd_t?
        guard gcry_md_open(&handle, Int32(GCRY_MD_SHA512.rawValue), UInt32(GCRY_MD_FLAG_SECURE.rawValue)) == 0, let handle else {
            fatalError("libgcrypt cannot hash with SHA-512")
        }
        defer { gcry_md_close(handle) }
        for part in parts { part.withUnsafeBytes { gcry_md_write(handle, $0.baseAddress, $0.count) } }
        return Array(UnsafeRawBufferPointer(start: gcry_md_read(handle, Int32(GCRY_MD_SHA512.rawValue)), count: 64))
    }

    /// MD5 of `bytes`: only for reading gnome-keyring's files, whose decrypted part starts with
    /// the MD5 of the rest (the check for a right password). Never for anything new.
    public static func md5(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        initialize()
        var digest = [UInt8](repeating: 0, count: 16)
        digest.withUnsafeMutableBytes { out in
            gcry_md_hash_buffer(Int32(GCRY_MD_MD5.rawValue), out.baseAddress, bytes.baseAddress, bytes.count)
        }
        return digest
    }

    // MARK: - gnome-keyring's file encryption (for reading its keyrings)

    /// The AES-128 key and IV of a gnome-keyring file: SHA-256 of `password` then `salt`,
    /// hashed again `iterations - 1` times; the first 16 bytes are the key, the next 16 the IV
    /// (gnome-keyring's `egg_symkey_generate_simple`, which is not PBKDF2).
    public static func gnomeKeyringKey(
        password: SecureBytes, salt: [UInt8], iterations: Int
    ) throws(CryptoError) -> (key: SecureBytes, iv: [UInt8]) {
        initialize()
        guard iterations >= 1 else { throw .invalidInput("a key derivation needs at least one iteration") }
        var handle: gcry_md_hd_t?
        let error = gcry_md_open(&handle, Int32(GCRY_MD_SHA256.rawValue), UInt32(GCRY_MD_FLAG_SECURE.rawValue))
        guard error == 0, let handle else { throw .library("sha256: \(describe(error))") }
        defer { gcry_md_close(handle) }
        let digest = SecureBytes(count: 32)
        password.withBytes { if $0.count > 0 { gcry_md_write(handle, $0.baseAddress, $0.count) } }
        salt.withUnsafeBytes { gcry_md_write(handle, $0.baseAddress, $0.count) }
        digest.withMutableBytes { $0.baseAddress!.copyMemory(from: gcry_md_read(handle, 0), byteCount: 32) }
        for _ in 1..<iterations {
            gcry_md_reset(handle)
            digest.withBytes { gcry_md_write(handle, $0.baseAddress, 32) }
            digest.withMutableBytes { $0.baseAddress!.copyMemory(from: gcry_md_read(handle, 0), byteCount: 32) }
        }
        return digest.withBytes { bytes in
            (SecureBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[0..<16])), Array(bytes[16..<32]))
        }
    }

    /// PBKDF2-HMAC-SHA256 of `password` and `salt` (RFC 8018), `length` bytes: the key of a
    /// libsecret or oo7 version 1 keyring file.
    public static func pbkdf2SHA256(
        password: SecureBytes, salt: [UInt8], iterations: Int, length: Int
    ) throws(CryptoError) -> SecureBytes {
        try pbkdf2(GCRY_MD_SHA256, password: password, salt: salt, iterations: iterations, length: length)
    }

    /// PBKDF2 with the HMAC of `hash`.
    private static func pbkdf2(
        _ hash: gcry_md_algos, password: SecureBytes, salt: [UInt8], iterations: Int, length: Int
    ) throws(CryptoError) -> SecureBytes {
        initialize()
        guard iterations >= 1, (1...64).contains(length) else { throw .invalidInput("PBKDF2 parameters are out of range") }
        let key = SecureBytes(count: length)
        let error = key.withMutableBytes { out in
            password.withBytes { passwordBytes in
                salt.withUnsafeBytes { saltBytes in
                    gcry_kdf_derive(
                        passwordBytes.baseAddress ?? saltBytes.baseAddress, passwordBytes.count, Int32(GCRY_KDF_PBKDF2.rawValue),
                        Int32(hash.rawValue), saltBytes.baseAddress, saltBytes.count, UInt(iterations), out.count, out.baseAddress)
                }
            }
        }
        guard error == 0 else { throw .library("pbkdf2: \(describe(error))") }
        return key
    }

    /// AES-128-CBC decryption of whole blocks with no padding to remove, as gnome-keyring's
    /// files use it (they pad with zeros and check an MD5 instead).
    public static func decryptAES128CBCBlocks(
        _ ciphertext: ArraySlice<UInt8>, key: SecureBytes, iv: [UInt8]
    ) throws(CryptoError) -> SecureBytes {
        guard ciphertext.count % 16 == 0 else { throw .invalidInput("encrypted data is not a whole number of AES blocks") }
        let cipher = try cbcCipher(key: key, iv: iv)
        defer { gcry_cipher_close(cipher) }
        let plaintext = SecureBytes(count: ciphertext.count)
        guard !ciphertext.isEmpty else { return plaintext }
        let error = plaintext.withMutableBytes { out in
            ciphertext.withUnsafeBytes { gcry_cipher_decrypt(cipher, out.baseAddress, out.count, $0.baseAddress, $0.count) }
        }
        guard error == 0 else { throw .library("aes-cbc: \(describe(error))") }
        return plaintext
    }

    // MARK: - KWallet's file encryption (for reading its wallets)

    /// PBKDF2-HMAC-SHA512 of `password` and `salt` (RFC 8018), `length` bytes: the key of a
    /// KWallet file since KDE 4.13 (50,000 iterations, 56 bytes, the salt in `NAME.salt`).
    public static func pbkdf2SHA512(
        password: SecureBytes, salt: [UInt8], iterations: Int, length: Int
    ) throws(CryptoError) -> SecureBytes {
        try pbkdf2(GCRY_MD_SHA512, password: password, salt: salt, iterations: iterations, length: length)
    }

    /// How a KWallet file chains its Blowfish blocks.
    public enum BlowfishMode: Sendable {
        /// CBC from an all-zero IV (cipher 3).
        case cbc
        /// Each block alone (cipher 0, files older than KDE 4.13: kwalletd reads them so and
        /// rewrites them as cipher 3).
        case ecb
    }

    /// Blowfish decryption of whole 8-byte blocks under a 1-56 byte `key`, with no padding to
    /// remove, as KWallet's files use it (they carry their length and a check sum inside).
    public static func decryptBlowfishBlocks(
        _ ciphertext: ArraySlice<UInt8>, key: SecureBytes, mode: BlowfishMode
    ) throws(CryptoError) -> SecureBytes {
        initialize()
        guard ciphertext.count % 8 == 0 else { throw .invalidInput("encrypted data is not a whole number of Blowfish blocks") }
        guard (1...56).contains(key.count) else { throw .invalidInput("a Blowfish key has 1 to 56 bytes") }
        let handle = try cipher(
            GCRY_CIPHER_BLOWFISH, mode == .cbc ? GCRY_CIPHER_MODE_CBC : GCRY_CIPHER_MODE_ECB, key: key,
            iv: mode == .cbc ? [UInt8](repeating: 0, count: 8) : nil, what: "blowfish")
        defer { gcry_cipher_close(handle) }
        let plaintext = SecureBytes(count: ciphertext.count)
        guard !ciphertext.isEmpty else { return plaintext }
        let error = plaintext.withMutableBytes { out in
            ciphertext.withUnsafeBytes { gcry_cipher_decrypt(handle, out.baseAddress, out.count, $0.baseAddress, $0.count) }
        }
        guard error == 0 else { throw .library("blowfish: \(describe(error))") }
        return plaintext
    }

    // MARK: - Secret Service transport encryption (dh-ietf1024-sha256-aes128-cbc-pkcs7)

    /// HKDF-SHA256 (RFC 5869) of `inputKey`; an empty `salt` means HashLen zero bytes.
    public static func hkdfSHA256(
        _ inputKey: SecureBytes, salt: [UInt8] = [], info: [UInt8] = [], length: Int
    ) throws(CryptoError) -> SecureBytes {
        let pseudoRandomKey = try inputKey.withBytes { (bytes) throws(CryptoError) in
            try hmacSHA256(key: SecureBytes(salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt), message: [bytes])
        }
        let output = SecureBytes(count: length)
        var previous = SecureBytes(count: 0)
        var offset = 0
        var counter: UInt8 = 1
        while offset < length {
            // T(n) = HMAC(PRK, T(n-1) | info | n)
            let message = SecureBytes(count: previous.count + info.count + 1)
            message.withMutableBytes { out in
                previous.withBytes { if $0.count > 0 { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
                for (index, byte) in info.enumerated() { out[previous.count + index] = byte }
                out[out.count - 1] = counter
            }
            let block = try message.withBytes { (bytes) throws(CryptoError) in
                try hmacSHA256(key: pseudoRandomKey, message: [bytes])
            }
            let take = min(32, length - offset)
            output.withMutableBytes { out in
                block.withBytes { out.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: take) }
            }
            offset += take
            counter += 1
            previous = block
        }
        return output
    }

    /// HMAC-SHA256 of the concatenated `message` parts.
    package static func hmacSHA256(key: SecureBytes, message: [UnsafeRawBufferPointer]) throws(CryptoError) -> SecureBytes {
        initialize()
        var handle: gcry_mac_hd_t?
        var error = gcry_mac_open(&handle, Int32(GCRY_MAC_HMAC_SHA256.rawValue), UInt32(GCRY_MAC_FLAG_SECURE.rawValue), nil)
        guard error == 0, let handle else { throw .library("hmac: \(describe(error))") }
        defer { gcry_mac_close(handle) }
        error = key.withBytes { gcry_mac_setkey(handle, $0.baseAddress, $0.count) }
        for part in message where error == 0 && part.count > 0 {
            error = gcry_mac_write(handle, part.baseAddress, part.count)
        }
        let digest = SecureBytes(count: 32)
        var length = 32
        if error == 0 { error = digest.withMutableBytes { gcry_mac_read(handle, $0.baseAddress, &length) } }
        guard error == 0 else { throw .library("hmac: \(describe(error))") }
        return digest
    }

    /// AES-128-CBC with PKCS#7 padding: encrypts `plaintext` under a 16-byte `key` and `iv`.
    public static func encryptAES128CBC(
        _ plaintext: SecureBytes, key: SecureBytes, iv: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        let padding = 16 - plaintext.count % 16
        let padded = SecureBytes(count: plaintext.count + padding)
        padded.withMutableBytes { out in
            plaintext.withBytes { if $0.count > 0 { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            for index in plaintext.count..<out.count { out[index] = UInt8(padding) }
        }
        let cipher = try cbcCipher(key: key, iv: iv)
        defer { gcry_cipher_close(cipher) }
        var output = [UInt8](repeating: 0, count: padded.count)
        let error = output.withUnsafeMutableBytes { out in
            padded.withBytes { gcry_cipher_encrypt(cipher, out.baseAddress, out.count, $0.baseAddress, $0.count) }
        }
        guard error == 0 else { throw .library("aes-cbc: \(describe(error))") }
        return output
    }

    /// AES-256-CBC with PKCS#7 padding under a 32-byte `key` (a KDBX database's payload).
    public static func encryptAES256CBC(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard key.count == 32, iv.count == 16 else { throw .invalidInput("AES-256-CBC needs a 32-byte key and a 16-byte IV") }
        return try encryptCBC(GCRY_CIPHER_AES256, plaintext, key: SecureBytes(key), iv: iv, what: "aes-256-cbc")
    }

    // MARK: - KeePass databases (for reading KDBX files)

    /// The block ciphers in CBC mode a KeePass database may be encrypted with.
    public enum DatabaseBlockCipher: Sendable {
        /// AES-256.
        case aes256
        /// Twofish (256-bit key).
        case twofish
    }

    /// CBC decryption under a 32-byte `key` and 16-byte `iv`, the PKCS#7 padding removed:
    /// a KeePass database's payload. `.invalidInput` for a bad length or padding (with a
    /// verified MAC, only a wrong key gives bad padding).
    public static func decryptCBC(
        _ cipher: DatabaseBlockCipher, _ ciphertext: [UInt8], key: [UInt8], iv: [UInt8]
    ) throws(CryptoError) -> SecureBytes {
        initialize()
        guard key.count == 32, iv.count == 16 else { throw .invalidInput("the cipher needs a 32-byte key and a 16-byte IV") }
        guard !ciphertext.isEmpty, ciphertext.count % 16 == 0 else { throw .invalidInput("encrypted data is not a whole number of blocks") }
        let handle = try Self.cipher(
            cipher == .aes256 ? GCRY_CIPHER_AES256 : GCRY_CIPHER_TWOFISH, GCRY_CIPHER_MODE_CBC, key: SecureBytes(key), iv: iv, what: "cbc")
        defer { gcry_cipher_close(handle) }
        let padded = SecureBytes(count: ciphertext.count)
        let error = padded.withMutableBytes { out in
            ciphertext.withUnsafeBytes { gcry_cipher_decrypt(handle, out.baseAddress, out.count, $0.baseAddress, $0.count) }
        }
        guard error == 0 else { throw .library("cbc: \(describe(error))") }
        return try removingPadding(padded, invalid: "the decrypted data has invalid padding")
    }

    /// Twofish-CBC with PKCS#7 padding, for tests that write a database with that cipher.
    package static func encryptTwofishCBC(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8]) throws(CryptoError) -> [UInt8] {
        try encryptCBC(GCRY_CIPHER_TWOFISH, plaintext, key: SecureBytes(key), iv: iv, secure: false, what: "twofish")
    }

    /// `plaintext` with PKCS#7 padding, encrypted with `algorithm` in CBC mode (not a secret
    /// that stays: a database being written, whose plaintext the caller holds).
    private static func encryptCBC(
        _ algorithm: gcry_cipher_algos, _ plaintext: [UInt8], key: SecureBytes, iv: [UInt8], secure: Bool = true, what: String
    ) throws(CryptoError) -> [UInt8] {
        let handle = try cipher(algorithm, GCRY_CIPHER_MODE_CBC, key: key, iv: iv, secure: secure, what: what)
        defer { gcry_cipher_close(handle) }
        let padding = 16 - plaintext.count % 16
        var output = plaintext + [UInt8](repeating: UInt8(padding), count: padding)
        let error = output.withUnsafeMutableBytes { gcry_cipher_encrypt(handle, $0.baseAddress, $0.count, nil, 0) }
        guard error == 0 else { throw .library("\(what): \(describe(error))") }
        return output
    }

    /// KeePass's AES-KDF: `key` (32 bytes) encrypted `rounds` times with AES-256-ECB under
    /// `seed` (32 bytes), then SHA-256 of the result.
    public static func aesKDF(_ key: [UInt8], seed: [UInt8], rounds: UInt64) throws(CryptoError) -> SecureBytes {
        initialize()
        guard key.count == 32, seed.count == 32 else { throw .invalidInput("AES-KDF needs a 32-byte key and seed") }
        let handle = try cipher(GCRY_CIPHER_AES256, GCRY_CIPHER_MODE_ECB, key: SecureBytes(seed), what: "aes-kdf")
        defer { gcry_cipher_close(handle) }
        var error: gcry_error_t = 0
        let block = SecureBytes(key)
        // One call a round: the key's two blocks, encrypted in place.
        var remaining = rounds
        while error == 0 && remaining > 0 {
            error = block.withMutableBytes { gcry_cipher_encrypt(handle, $0.baseAddress, 32, nil, 0) }
            remaining -= 1
        }
        guard error == 0 else { throw .library("aes-kdf: \(describe(error))") }
        let digest = SecureBytes(count: 32)
        digest.withMutableBytes { out in
            block.withBytes { gcry_md_hash_buffer(Int32(GCRY_MD_SHA256.rawValue), out.baseAddress, $0.baseAddress, 32) }
        }
        return digest
    }

    /// A keystream (ChaCha20 with a 12-byte nonce, or Salsa20 with an 8-byte one) that XORs
    /// bytes in order: a KeePass database's outer cipher (ChaCha20) and its inner stream for
    /// protected values, which is consumed value after value.
    public final class KeyStream {
        /// The stream ciphers.
        public enum Algorithm: Sendable {
            /// ChaCha20 (IETF, 12-byte nonce, block counter from 0).
            case chaCha20
            /// Salsa20 (20 rounds, 8-byte nonce).
            case salsa20
        }

        private let handle: gcry_cipher_hd_t

        /// A stream under a 32-byte `key` and `nonce`.
        public init(_ algorithm: Algorithm, key: [UInt8], nonce: [UInt8]) throws(CryptoError) {
            initialize()
            let (cipher, nonceLength) = algorithm == .chaCha20 ? (GCRY_CIPHER_CHACHA20, 12) : (GCRY_CIPHER_SALSA20, 8)
            guard key.count == 32, nonce.count == nonceLength else { throw .invalidInput("the stream cipher needs a 32-byte key and a \(nonceLength)-byte nonce") }
            handle = try Gcrypt.cipher(cipher, GCRY_CIPHER_MODE_STREAM, key: SecureBytes(key), iv: nonce, what: "stream cipher")
        }

        deinit { gcry_cipher_close(handle) }

        /// XORs the next `bytes.count` bytes of the stream into `bytes`.
        public func apply(_ bytes: UnsafeMutableRawBufferPointer) throws(CryptoError) {
            guard bytes.count > 0 else { return }
            let error = gcry_cipher_encrypt(handle, bytes.baseAddress, bytes.count, nil, 0)
            guard error == 0 else { throw .library("stream cipher: \(describe(error))") }
        }
    }

    /// Reverses ``encryptAES128CBC(_:key:iv:)``; `.invalidInput` for a bad length or padding.
    public static func decryptAES128CBC(
        _ ciphertext: [UInt8], key: SecureBytes, iv: [UInt8]
    ) throws(CryptoError) -> SecureBytes {
        guard !ciphertext.isEmpty, ciphertext.count % 16 == 0 else {
            throw .invalidInput("encrypted secret is not a whole number of AES blocks")
        }
        let cipher = try cbcCipher(key: key, iv: iv)
        defer { gcry_cipher_close(cipher) }
        let padded = SecureBytes(count: ciphertext.count)
        let error = padded.withMutableBytes { out in
            ciphertext.withUnsafeBytes { gcry_cipher_decrypt(cipher, out.baseAddress, out.count, $0.baseAddress, $0.count) }
        }
        guard error == 0 else { throw .library("aes-cbc: \(describe(error))") }
        return try removingPadding(padded, invalid: "encrypted secret has invalid padding")
    }

    private static func cbcCipher(key: SecureBytes, iv: [UInt8]) throws(CryptoError) -> gcry_cipher_hd_t {
        guard key.count == 16, iv.count == 16 else { throw .invalidInput("AES-128-CBC needs a 16-byte key and IV") }
        return try cipher(GCRY_CIPHER_AES, GCRY_CIPHER_MODE_CBC, key: key, iv: iv, what: "aes-cbc")
    }

    /// A Diffie-Hellman key pair over RFC 2409's Second Oakley Group (1024-bit MODP, g = 2),
    /// as the Secret Service's `dh-ietf1024-sha256-aes128-cbc-pkcs7` session uses.
    public final class DiffieHellman {
        private let privateKey: gcry_mpi_t
        /// Our public value, big-endian unsigned bytes (what goes over D-Bus).
        public let publicKey: [UInt8]

        /// The group's prime, from RFC 2409 §6.2.
        package static let primeHex = """
            FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD\
            EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED\
            EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF
            """

        /// Bits of the random private exponent. The 1024-bit group gives about 80 bits of
        /// security; an exponent of twice the strength or more (NIST SP 800-56A: at least 160
        /// bits for this group) keeps it, and 256 bits makes opening a session four times
        /// cheaper than a full-size exponent. Clients that open a session per call (Python
        /// `secretstorage`, and so `keyring`) pay this on every lookup.
        package static let privateExponentBits: UInt32 = 256

        /// A fresh random key pair.
        public init() {
            Gcrypt.initialize()
            privateKey = gcry_mpi_snew(Self.privateExponentBits)!
            gcry_mpi_randomize(privateKey, Self.privateExponentBits, GCRY_STRONG_RANDOM)
            gcry_mpi_set_bit(privateKey, Self.privateExponentBits - 1)  // exactly that many bits
            let prime = Self.prime()
            defer { gcry_mpi_release(prime) }
            let generator = gcry_mpi_set_ui(nil, 2)!
            defer { gcry_mpi_release(generator) }
            let publicValue = gcry_mpi_new(1024)!
            defer { gcry_mpi_release(publicValue) }
            gcry_mpi_powm(publicValue, generator, privateKey, prime)
            publicKey = Self.bytes(publicValue, paddedTo: nil)
        }

        deinit { gcry_mpi_release(privateKey) }

        /// The 16-byte AES key both sides derive: HKDF-SHA256 (no salt, no info) of the shared
        /// secret left-padded with zeros to 128 bytes, as libsecret does.
        public func sessionKey(peerPublicKey: [UInt8]) throws(CryptoError) -> SecureBytes {
            guard !peerPublicKey.isEmpty, peerPublicKey.count <= 256 else {
                throw .invalidInput("DH public key has an invalid length")
            }
            let prime = Self.prime()
            defer { gcry_mpi_release(prime) }
            var peer: gcry_mpi_t?
            let error = peerPublicKey.withUnsafeBytes {
                gcry_mpi_scan(&peer, GCRYMPI_FMT_USG, $0.baseAddress, $0.count, nil)
            }
            guard error == 0, let peer else { throw .invalidInput("DH public key is not a number") }
            defer { gcry_mpi_release(peer) }
            // 1 < y < p - 1, so the shared secret is not trivially predictable.
            let maximum = gcry_mpi_new(1024)!
            defer { gcry_mpi_release(maximum) }
            gcry_mpi_sub_ui(maximum, prime, 1)
            guard gcry_mpi_cmp_ui(peer, 1) > 0, gcry_mpi_cmp(peer, maximum) < 0 else {
                throw .invalidInput("DH public key is out of range")
            }
            let shared = gcry_mpi_snew(1024)!
            defer { gcry_mpi_release(shared) }
            gcry_mpi_powm(shared, peer, privateKey, prime)
            let secret = SecureBytes(Self.bytes(shared, paddedTo: 128))
            return try Gcrypt.hkdfSHA256(secret, length: 16)
        }

        private static func prime() -> gcry_mpi_t {
            var prime: gcry_mpi_t?
            _ = gcry_mpi_scan(&prime, GCRYMPI_FMT_HEX, primeHex, 0, nil)
            return prime!
        }

        /// Big-endian unsigned bytes of `value`, left-padded with zeros to `length` if given.
        private static func bytes(_ value: gcry_mpi_t, paddedTo length: Int?) -> [UInt8] {
            var count = 0
            gcry_mpi_print(GCRYMPI_FMT_USG, nil, 0, &count, value)
            var output = [UInt8](repeating: 0, count: max(count, length ?? 0))
            let start = output.count - count
            output.withUnsafeMutableBytes { buffer in
                _ = gcry_mpi_print(GCRYMPI_FMT_USG, buffer.baseAddress! + start, count, nil, value)
            }
            return output
        }
    }

    // MARK: - X25519 (RFC 7748), for sync devices' key agreement

    /// Length of X25519 private and public keys, and of their shared secret.
    public static let x25519Length = 32

    /// The X25519 public key of `privateKey` (32 bytes, as ``randomKey(count:)`` makes them).
    public static func x25519PublicKey(of privateKey: SecureBytes) throws(CryptoError) -> [UInt8] {
        try x25519Multiply(privateKey, by: nil).withBytes { Array($0) }
    }

    /// The secret `privateKey` shares with the holder of `peerPublicKey`, in secure memory;
    /// `.invalidInput` for a public key of the wrong size or of low order (an all-zero result).
    public static func x25519SharedSecret(_ privateKey: SecureBytes, peerPublicKey: [UInt8]) throws(CryptoError) -> SecureBytes {
        guard peerPublicKey.count == x25519Length else { throw .invalidInput("an X25519 public key has 32 bytes") }
        let shared = try x25519Multiply(privateKey, by: peerPublicKey)
        guard shared.withBytes({ $0.contains { $0 != 0 } }) else { throw .invalidInput("the X25519 public key is of low order") }
        return shared
    }

    /// `scalar` times `point` on Curve25519 (the base point when nil).
    private static func x25519Multiply(_ scalar: SecureBytes, by point: [UInt8]?) throws(CryptoError) -> SecureBytes {
        initialize()
        guard scalar.count == x25519Length else { throw .invalidInput("an X25519 private key has 32 bytes") }
        let result = SecureBytes(count: x25519Length)
        let error: gcry_error_t = result.withMutableBytes { output in
            scalar.withBytes { scalarBytes in
                let scalarPointer = scalarBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                let outputPointer = output.baseAddress!.assumingMemoryBound(to: UInt8.self)
                guard let point else {
                    return gcry_ecc_mul_point(Int32(GCRY_ECC_CURVE25519.rawValue), outputPointer, scalarPointer, nil)
                }
                return point.withUnsafeBufferPointer {
                    gcry_ecc_mul_point(Int32(GCRY_ECC_CURVE25519.rawValue), outputPointer, scalarPointer, $0.baseAddress)
                }
            }
        }
        guard error == 0 else { throw .library("x25519: \(describe(error))") }
        return result
    }

    private static func describe(_ error: gcry_error_t) -> String {
        String(cString: gcry_strerror(error))
    }
}
