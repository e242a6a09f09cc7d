// Public-key signatures for secretd's SSH agent: Ed25519, ECDSA over the NIST curves and RSA
// PKCS#1 v1.5. With Gcrypt.swift and SecureBytes.swift, the only file that calls libgcrypt.
// Private keys reach libgcrypt as canonical S-expressions built in secure memory (libgcrypt keeps
// what it parses from secure memory there too), and every S-expression is released, wiped, at
// the end of the call.

internal import CGcrypt

extension Gcrypt {
    /// The message digests SSH signatures use.
    public enum Digest: Sendable, Equatable {
        /// SHA-1: only `ssh-rsa` signatures, when a client asks for them.
        case sha1
        /// SHA-256.
        case sha256
        /// SHA-384.
        case sha384
        /// SHA-512.
        case sha512

        var algorithm: Int32 {
            switch self {
            case .sha1: Int32(GCRY_MD_SHA1.rawValue)
            case .sha256: Int32(GCRY_MD_SHA256.rawValue)
            case .sha384: Int32(GCRY_MD_SHA384.rawValue)
            case .sha512: Int32(GCRY_MD_SHA512.rawValue)
            }
        }

        /// libgcrypt's name for it in a `(hash NAME DIGEST)` list.
        var name: String {
            switch self {
            case .sha1: "sha1"
            case .sha256: "sha256"
            case .sha384: "sha384"
            case .sha512: "sha512"
            }
        }
    }

    /// The NIST curves of `ecdsa-sha2-nistp256`, `-nistp384` and `-nistp521`.
    public enum Curve: String, Sendable, CaseIterable {
        /// NIST P-256, signed with SHA-256.
        case p256 = "NIST P-256"
        /// NIST P-384, signed with SHA-384.
        case p384 = "NIST P-384"
        /// NIST P-521, signed with SHA-512.
        case p521 = "NIST P-521"

        /// Bytes of a coordinate or of the private scalar.
        public var fieldLength: Int {
            switch self {
            case .p256: 32
            case .p384: 48
            case .p521: 66
            }
        }

        /// The digest SSH pairs with the curve (RFC 5656 §6.2.1).
        public var digest: Digest {
            switch self {
            case .p256: .sha256
            case .p384: .sha384
            case .p521: .sha512
            }
        }
    }

    /// An RSA private key as OpenSSH's agent protocol carries it: unsigned big-endian numbers,
    /// the secret ones in secure memory. `iqmp` is q⁻¹ mod p.
    public struct RSAPrivateKey: Sendable {
        /// The modulus.
        public var n: [UInt8]
        /// The public exponent.
        public var e: [UInt8]
        /// The private exponent.
        public var d: SecureBytes
        /// The first prime.
        public var p: SecureBytes
        /// The second prime.
        public var q: SecureBytes
        /// q⁻¹ mod p.
        public var iqmp: SecureBytes

        /// A key from its parts.
        public init(n: [UInt8], e: [UInt8], d: SecureBytes, p: SecureBytes, q: SecureBytes, iqmp: SecureBytes) {
            self.n = n
            self.e = e
            self.d = d
            self.p = p
            self.q = q
            self.iqmp = iqmp
        }
    }

    /// The digest of `message` with `digest`.
    public static func hash(_ message: [UInt8], with digest: Digest) -> [UInt8] {
        initialize()
        let length = Int(gcry_md_get_algo_dlen(digest.algorithm))
        var output = [UInt8](repeating: 0, count: length)
        output.withUnsafeMutableBytes { out in
            message.withUnsafeBytes { gcry_md_hash_buffer(digest.algorithm, out.baseAddress, $0.baseAddress, $0.count) }
        }
        return output
    }

    // MARK: - Ed25519 (RFC 8032)

    /// The 64-byte Ed25519 signature (R ‖ S) of `message` by the key whose 32-byte private seed is
    /// `seed` and whose public key is `publicKey`.
    public static func ed25519Sign(seed: SecureBytes, publicKey: [UInt8], message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard seed.count == 32, publicKey.count == 32 else { throw .invalidInput("an Ed25519 key has 32-byte halves") }
        let key = try Sexp.parse([
            .open, .token("private-key"), .open, .token("ecc"), .open, .token("curve"), .token("Ed25519"), .close,
            .open, .token("flags"), .token("eddsa"), .close, .open, .token("q"), .bytes(publicKey), .close,
            .open, .token("d"), .secret(seed), .close, .close, .close,
        ])
        let signature = try sign(ed25519Data(message), with: key)
        let r = try signature.value(of: "r", fixedLength: 32)
        let s = try signature.value(of: "s", fixedLength: 32)
        return r + s
    }

    /// Whether `signature` is `publicKey`'s Ed25519 signature of `message`.
    public static func ed25519Verify(publicKey: [UInt8], message: [UInt8], signature: [UInt8]) -> Bool {
        guard publicKey.count == 32, signature.count == 64,
            let key = try? Sexp.parse([
                .open, .token("public-key"), .open, .token("ecc"), .open, .token("curve"), .token("Ed25519"), .close,
                .open, .token("flags"), .token("eddsa"), .close, .open, .token("q"), .bytes(publicKey), .close, .close, .close,
            ]),
            let value = try? Sexp.parse([
                .open, .token("sig-val"), .open, .token("eddsa"), .open, .token("r"), .bytes(Array(signature[0..<32])), .close,
                .open, .token("s"), .bytes(Array(signature[32..<64])), .close, .close, .close,
            ]),
            let data = try? ed25519Data(message)
        else { return false }
        return gcry_pk_verify(value.handle, data.handle, key.handle) == 0
    }

    private static func ed25519Data(_ message: [UInt8]) throws(CryptoError) -> Sexp {
        try Sexp.parse([
            .open, .token("data"), .open, .token("flags"), .token("eddsa"), .close,
            .open, .token("hash-algo"), .token("sha512"), .close, .open, .token("value"), .bytes(message), .close, .close,
        ])
    }

    // MARK: - ECDSA (FIPS 186-4, deterministic nonces of RFC 6979)

    /// The ECDSA signature (r, s; unsigned big-endian) of `message`, hashed with the curve's
    /// digest, by the private scalar `privateKey` whose public point is `publicPoint`
    /// (uncompressed, 0x04 ‖ x ‖ y). The nonce is derived from the key and the digest (RFC 6979).
    public static func ecdsaSign(
        curve: Curve, privateKey: SecureBytes, publicPoint: [UInt8], message: [UInt8]
    ) throws(CryptoError) -> (r: [UInt8], s: [UInt8]) {
        guard publicPoint.count == 1 + 2 * curve.fieldLength, publicPoint.first == 4 else {
            throw .invalidInput("the public point is not an uncompressed point of \(curve.rawValue)")
        }
        guard privateKey.count >= 1, privateKey.count <= curve.fieldLength + 1 else {
            throw .invalidInput("the private scalar is too long for \(curve.rawValue)")
        }
        let key = try Sexp.parse([
            .open, .token("private-key"), .open, .token("ecc"), .open, .token("curve"), .token(curve.rawValue), .close,
            .open, .token("q"), .bytes(publicPoint), .close, .open, .token("d"), .secret(privateKey), .close, .close, .close,
        ])
        let signature = try sign(hashData(message, digest: curve.digest, flags: "rfc6979"), with: key)
        return (try signature.number(of: "r"), try signature.number(of: "s"))
    }

    /// Whether (r, s) is `publicPoint`'s ECDSA signature of `message` on `curve`.
    public static func ecdsaVerify(curve: Curve, publicPoint: [UInt8], message: [UInt8], r: [UInt8], s: [UInt8]) -> Bool {
        guard let key = try? Sexp.parse([
                .open, .token("public-key"), .open, .token("ecc"), .open, .token("curve"), .token(curve.rawValue), .close,
                .open, .token("q"), .bytes(publicPoint), .close, .close, .close,
            ]),
            let value = try? Sexp.parse([
                .open, .token("sig-val"), .open, .token("ecdsa"), .open, .token("r"), .bytes(positive(r)), .close,
                .open, .token("s"), .bytes(positive(s)), .close, .close, .close,
            ]),
            let data = try? hashData(message, digest: curve.digest, flags: "rfc6979")
        else { return false }
        return gcry_pk_verify(value.handle, data.handle, key.handle) == 0
    }

    // MARK: - RSA (PKCS#1 v1.5)

    /// The RSASSA-PKCS1-v1_5 signature of `message` with `digest` by `key`, as long as the modulus.
    public static func rsaSign(key: RSAPrivateKey, digest: Digest, message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let modulus = positive(key.n)
        // libgcrypt's u is p⁻¹ mod q; OpenSSH's iqmp is q⁻¹ mod p: swapping the primes makes them one.
        let handle = try Sexp.parse([
            .open, .token("private-key"), .open, .token("rsa"),
            .open, .token("n"), .bytes(modulus), .close, .open, .token("e"), .bytes(positive(key.e)), .close,
            .open, .token("d"), .secret(key.d), .close, .open, .token("p"), .secret(key.q), .close,
            .open, .token("q"), .secret(key.p), .close, .open, .token("u"), .secret(key.iqmp), .close, .close, .close,
        ])
        let signature = try sign(hashData(message, digest: digest, flags: "pkcs1"), with: handle)
        let s = try signature.number(of: "s")
        let length = modulus.first == 0 ? modulus.count - 1 : modulus.count
        guard s.count <= length else { throw .library("rsa: the signature is longer than the modulus") }
        return [UInt8](repeating: 0, count: length - s.count) + s
    }

    /// Whether `signature` is the RSA key (n, e)'s PKCS#1 v1.5 signature of `message` with `digest`.
    public static func rsaVerify(n: [UInt8], e: [UInt8], digest: Digest, message: [UInt8], signature: [UInt8]) -> Bool {
        guard let key = try? Sexp.parse([
                .open, .token("public-key"), .open, .token("rsa"), .open, .token("n"), .bytes(positive(n)), .close,
                .open, .token("e"), .bytes(positive(e)), .close, .close, .close,
            ]),
            let value = try? Sexp.parse([
                .open, .token("sig-val"), .open, .token("rsa"), .open, .token("s"), .bytes(positive(signature)), .close, .close, .close,
            ]),
            let data = try? hashData(message, digest: digest, flags: "pkcs1")
        else { return false }
        return gcry_pk_verify(value.handle, data.handle, key.handle) == 0
    }

    // MARK: - Shared

    /// `(data (flags FLAGS) (hash NAME DIGEST))` for `message`.
    private static func hashData(_ message: [UInt8], digest: Digest, flags: String) throws(CryptoError) -> Sexp {
        try Sexp.parse([
            .open, .token("data"), .open, .token("flags"), .token(flags), .close,
            .open, .token("hash"), .token(digest.name), .bytes(hash(message, with: digest)), .close, .close,
        ])
    }

    private static func sign(_ data: Sexp, with key: Sexp) throws(CryptoError) -> Sexp {
        var result: gcry_sexp_t?
        let error = gcry_pk_sign(&result, data.handle, key.handle)
        guard error == 0, let result else { throw .library("sign: \(String(cString: gcry_strerror(error)))") }
        return Sexp(result)
    }

    /// `bytes` as a positive number in libgcrypt's standard format: no leading zeros but one
    /// before a first byte with its top bit set.
    static func positive(_ bytes: [UInt8]) -> [UInt8] {
        let digits = bytes.drop { $0 == 0 }
        guard let first = digits.first else { return [0] }
        return first & 0x80 != 0 ? [0] + digits : Array(digits)
    }

    /// An S-expression libgcrypt holds, released when this is.
    private final class Sexp {
        let handle: gcry_sexp_t

        init(_ handle: gcry_sexp_t) { self.handle = handle }
        deinit { gcry_sexp_release(handle) }

        /// A piece of a canonical S-expression.
        enum Part {
            case open, close
            /// A token (an ASCII name).
            case token(String)
            /// Public bytes.
            case bytes([UInt8])
            /// Secret bytes; the expression is built and parsed in secure memory.
            case secret(SecureBytes)

            var length: Int {
                switch self {
                case .open, .close: 1
                case .token(let token): Self.prefixLength(token.utf8.count) + token.utf8.count
                case .bytes(let bytes): bytes.isEmpty ? 2 : Self.prefixLength(bytes.count) + bytes.count
                case .secret(let secret): Self.prefixLength(secret.count) + secret.count
                }
            }

            static func prefixLength(_ count: Int) -> Int { String(count).utf8.count + 1 }
        }

        /// Parses the canonical S-expression made of `parts` (built in secure memory).
        static func parse(_ parts: [Part]) throws(CryptoError) -> Sexp {
            Gcrypt.initialize()
            let buffer = SecureBytes(count: parts.reduce(0) { $0 + $1.length })
            buffer.withMutableBytes { out in
                var offset = 0
                func put<C: Collection<UInt8>>(_ bytes: C) {
                    for byte in bytes {
                        out[offset] = byte
                        offset += 1
                    }
                }
                func put(prefix count: Int) {
                    put(String(count).utf8)
                    put(CollectionOfOne(UInt8(ascii: ":")))
                }
                for part in parts {
                    switch part {
                    case .open: put(CollectionOfOne(UInt8(ascii: "(")))
                    case .close: put(CollectionOfOne(UInt8(ascii: ")")))
                    case .token(let token):
                        put(prefix: token.utf8.count)
                        put(token.utf8)
                    case .bytes(let bytes) where bytes.isEmpty:
                        put(#""""#.utf8)  // canonical form has no empty string ("0:" is refused); the quoted one is
                    case .bytes(let bytes):
                        put(prefix: bytes.count)
                        put(bytes)
                    case .secret(let secret):
                        put(prefix: secret.count)
                        secret.withBytes { put($0) }
                    }
                }
            }
            var handle: gcry_sexp_t?
            let error = buffer.withBytes { gcry_sexp_sscan(&handle, nil, $0.baseAddress, $0.count) }
            guard error == 0, let handle else { throw .invalidInput("a key or value libgcrypt refuses") }
            return Sexp(handle)
        }

        /// The data of the sub-list `(NAME DATA)`, left-padded with zeros to `fixedLength`.
        func value(of name: String, fixedLength: Int) throws(CryptoError) -> [UInt8] {
            guard let list = gcry_sexp_find_token(handle, name, 0) else { throw .library("no \(name) in the signature") }
            defer { gcry_sexp_release(list) }
            var length = 0
            guard let data = gcry_sexp_nth_data(list, 1, &length), length <= fixedLength else {
                throw .library("the signature's \(name) is malformed")
            }
            return [UInt8](repeating: 0, count: fixedLength - length) + Array(UnsafeRawBufferPointer(start: data, count: length))
        }

        /// The number in the sub-list `(NAME NUMBER)`, unsigned big-endian without leading zeros.
        func number(of name: String) throws(CryptoError) -> [UInt8] {
            guard let list = gcry_sexp_find_token(handle, name, 0) else { throw .library("no \(name) in the signature") }
            defer { gcry_sexp_release(list) }
            guard let mpi = gcry_sexp_nth_mpi(list, 1, Int32(GCRYMPI_FMT_USG.rawValue)) else {
                throw .library("the signature's \(name) is not a number")
            }
            defer { gcry_mpi_release(mpi) }
            var count = 0
            gcry_mpi_print(GCRYMPI_FMT_USG, nil, 0, &count, mpi)
            var output = [UInt8](repeating: 0, count: count)
            output.withUnsafeMutableBytes { _ = gcry_mpi_print(GCRYMPI_FMT_USG, $0.baseAddress, count, nil, mpi) }
            return Array(output.drop { $0 == 0 })
        }
    }
}
