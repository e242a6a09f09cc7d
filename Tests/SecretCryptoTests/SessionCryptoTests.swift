import Foundation
import Testing

@testable import SecretCrypto

/// The primitives of the `dh-ietf1024-sha256-aes128-cbc-pkcs7` session algorithm.
@Suite struct SessionCrypto {
    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    func hex(_ bytes: SecureBytes) -> String { bytes.withBytes { hex(Array($0)) } }
    func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    @Test("HKDF-SHA256 matches RFC 5869 test cases 1 and 3")
    func hkdf() throws {
        let okm = try Gcrypt.hkdfSHA256(
            SecureBytes([UInt8](repeating: 0x0b, count: 22)), salt: bytes("000102030405060708090a0b0c"),
            info: bytes("f0f1f2f3f4f5f6f7f8f9"), length: 42)
        #expect(hex(okm) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        let noSalt = try Gcrypt.hkdfSHA256(SecureBytes([UInt8](repeating: 0x0b, count: 22)), length: 42)
        #expect(hex(noSalt) == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }

    @Test("AES-128-CBC matches NIST SP 800-38A F.2.1 and round-trips with PKCS#7 padding")
    func aesCBC() throws {
        let key = SecureBytes(bytes("2b7e151628aed2a6abf7158809cf4f3c"))
        let iv = bytes("000102030405060708090a0b0c0d0e0f")
        let encrypted = try Gcrypt.encryptAES128CBC(SecureBytes(bytes("6bc1bee22e409f96e93d7e117393172a")), key: key, iv: iv)
        #expect(encrypted.count == 32)  // a full padding block follows a whole block
        #expect(hex(Array(encrypted[0..<16])) == "7649abac8119b246cee98e9b12e9197d")
        for length in [0, 1, 15, 16, 17, 1000] {
            let plaintext = SecureBytes((0..<length).map { UInt8(truncatingIfNeeded: $0) })
            let sealed = try Gcrypt.encryptAES128CBC(plaintext, key: key, iv: iv)
            #expect(try Gcrypt.decryptAES128CBC(sealed, key: key, iv: iv).constantTimeEquals(plaintext))
        }
        #expect(throws: CryptoError.self) { try Gcrypt.decryptAES128CBC([1, 2, 3], key: key, iv: iv) }
        var tampered = encrypted
        tampered[31] ^= 0xff
        #expect(throws: CryptoError.invalidInput("encrypted secret has invalid padding")) {
            try Gcrypt.decryptAES128CBC(tampered, key: key, iv: iv)
        }
    }

    @Test("two DH parties derive the same session key; bad public keys are refused")
    func agreement() throws {
        let alice = Gcrypt.DiffieHellman()
        let bob = Gcrypt.DiffieHellman()
        #expect(alice.publicKey.count <= 128)
        let one = try alice.sessionKey(peerPublicKey: bob.publicKey)
        let two = try bob.sessionKey(peerPublicKey: alice.publicKey)
        #expect(one.count == 16)
        #expect(one.constantTimeEquals(two))
        #expect(throws: CryptoError.invalidInput("DH public key is out of range")) { try alice.sessionKey(peerPublicKey: [1]) }
        #expect(throws: CryptoError.invalidInput("DH public key has an invalid length")) { try alice.sessionKey(peerPublicKey: []) }
        let primeMinusOne = bytes(Gcrypt.DiffieHellman.primeHex.replacingOccurrences(of: "\n", with: "").lowercased())
            .enumerated().map { $0.offset == 127 ? $0.element - 1 : $0.element }
        #expect(throws: CryptoError.invalidInput("DH public key is out of range")) {
            try alice.sessionKey(peerPublicKey: primeMinusOne)
        }
    }

    @Test("the session key matches an independent implementation (Python pow + HMAC)")
    func independentPeer() throws {
        let ours = Gcrypt.DiffieHellman()
        let script = """
            import hashlib, hmac, secrets, sys
            p = int(sys.argv[1], 16)
            peer = int(sys.argv[2], 16)
            x = secrets.randbits(1024)
            shared = pow(peer, x, p).to_bytes(128, 'big')
            prk = hmac.new(b'\\0' * 32, shared, hashlib.sha256).digest()
            key = hmac.new(prk, b'\\x01', hashlib.sha256).digest()[:16]
            print(format(pow(2, x, p), 'x'), key.hex())
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script, Gcrypt.DiffieHellman.primeHex.replacingOccurrences(of: "\n", with: ""),
                             hex(ours.publicKey)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let fields = text.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        try #require(fields.count == 2, "python printed: \(text)")
        let theirPublic = bytes(fields[0].count % 2 == 1 ? "0" + fields[0] : fields[0])
        #expect(hex(try ours.sessionKey(peerPublicKey: theirPublic)) == fields[1])
    }
}
