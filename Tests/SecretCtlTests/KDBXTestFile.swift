import Foundation
import SecretCrypto

@testable import SecretCtl

/// KDBX 4 files written here, for the paths keepassxc-cli 2.7 cannot choose (it always writes
/// AES-256 with AES-KDF): Argon2d and Argon2id, ChaCha20 and Twofish, no compression, the
/// Salsa20 inner stream. Written from the format's description (the research notes), not
/// from ``KDBXExport`` or ``KDBXImport``.
struct KDBXTestFile {
    enum KDF: String, CaseIterable, Sendable { case argon2d, argon2id, aes }
    enum Cipher: String, CaseIterable, Sendable { case aes256, chaCha20, twofish }

    var minor: UInt16 = 0
    var kdf = KDF.argon2d
    var cipher = Cipher.aes256
    var gzip = true
    /// 2 Salsa20, 3 ChaCha20.
    var innerStream: UInt32 = 3
    /// The size of the HMAC blocks (small, so that a file has several).
    var blockSize = 512

    /// The database's bytes; `xml` writes the document, calling `protect` for each protected
    /// value in document order (it returns the value's base64).
    func bytes(password: String, xml: (_ protect: (String) -> String) -> String) throws -> [UInt8] {
        let masterSeed = Gcrypt.randomBytes(count: 32)
        let iv = Gcrypt.randomBytes(count: cipher == .chaCha20 ? 12 : 16)
        let salt = Gcrypt.randomBytes(count: 32)
        var header = le(UInt32(0x9AA2_D903)) + le(UInt32(0xB54B_FB67)) + le(UInt16(minor)) + le(UInt16(4))
        let cipherID: String
        switch cipher {
        case .aes256: cipherID = "31c1f2e6bf714350be5805216afc5aff"
        case .chaCha20: cipherID = "d6038a2b8b6f4cb5a524339a31dbb59a"
        case .twofish: cipherID = "ad68f29f576f4bb9a36ad47af965346c"
        }
        header += field(2, hex(cipherID))
        header += field(3, le(UInt32(gzip ? 1 : 0)))
        header += field(4, masterSeed)
        header += field(7, iv)
        func entry(_ type: UInt8, _ name: String, _ value: [UInt8]) -> [UInt8] {
            [type] + le(UInt32(name.utf8.count)) + Array(name.utf8) + le(UInt32(value.count)) + value
        }
        var dictionary: [UInt8] = [0x00, 0x01]
        let composite = Gcrypt.sha256(Gcrypt.sha256(Array(password.utf8)))
        let transformed: [UInt8]
        switch kdf {
        case .argon2d, .argon2id:
            dictionary += entry(0x42, "$UUID", hex(kdf == .argon2d ? "ef636ddf8c29444b91f7a9a403e30a0c" : "9e298b1956db4773b23dfc3ec6f0a1e6"))
            dictionary += entry(0x42, "S", salt) + entry(0x04, "P", le(UInt32(2))) + entry(0x05, "M", le(UInt64(64 * 1024)))
            dictionary += entry(0x05, "I", le(UInt64(2))) + entry(0x04, "V", le(UInt32(0x13)))
            transformed = try composite.withUnsafeBytes {
                try Gcrypt.argon2(kdf == .argon2d ? .argon2d : .argon2id, password: $0, salt: salt, parameters: KDFParameters(iterations: 2, memoryKiB: 64, lanes: 2))
            }.withBytes { Array($0) }
        case .aes:
            dictionary += entry(0x42, "$UUID", hex("7c02bb8279a74ac0927d114a00648238"))
            dictionary += entry(0x05, "R", le(UInt64(1000))) + entry(0x42, "S", salt)
            transformed = try Gcrypt.aesKDF(composite, seed: salt, rounds: 1000).withBytes { Array($0) }
        }
        header += field(11, dictionary + [0])
        header += field(0, Array("\r\n\r\n".utf8))
        let cipherKey = Gcrypt.sha256(masterSeed + transformed)
        let hmacBase = Gcrypt.sha512([masterSeed, transformed, [1]])

        // The inner stream, consumed by the protected values in document order.
        let innerKey = Gcrypt.randomBytes(count: 64)
        let stream: Gcrypt.KeyStream
        if innerStream == 2 {
            stream = try Gcrypt.KeyStream(.salsa20, key: Gcrypt.sha256(innerKey), nonce: hex("e830094b97205d2a"))
        } else {
            let hash = Gcrypt.sha512([innerKey])
            stream = try Gcrypt.KeyStream(.chaCha20, key: Array(hash[0..<32]), nonce: Array(hash[32..<44]))
        }
        let document = xml { value in
            var bytes = Array(value.utf8)
            try! bytes.withUnsafeMutableBytes { try stream.apply($0) }
            return Data(bytes).base64EncodedString()
        }
        var payload = field(1, le(innerStream)) + field(2, innerKey) + field(0, []) + Array(document.utf8)
        if gzip { payload = Zlib.gzip(payload) }
        let encrypted: [UInt8]
        switch cipher {
        case .aes256: encrypted = try Gcrypt.encryptAES256CBC(payload, key: cipherKey, iv: iv)
        case .twofish: encrypted = try Gcrypt.encryptTwofishCBC(payload, key: cipherKey, iv: iv)
        case .chaCha20:
            var bytes = payload
            let outer = try Gcrypt.KeyStream(.chaCha20, key: cipherKey, nonce: iv)
            try bytes.withUnsafeMutableBytes { try outer.apply($0) }
            encrypted = bytes
        }
        var output = header + Gcrypt.sha256(header) + (try Self.hmac(.max, hmacBase, header))
        var index: UInt64 = 0
        var start = 0
        while true {
            let block = Array(encrypted[start..<min(start + blockSize, encrypted.count)])
            let size = le(UInt32(block.count))
            output += try Self.hmac(index, hmacBase, le(index) + size + block) + size + block
            if block.isEmpty { break }
            start += block.count
            index += 1
        }
        return output
    }

    private static func hmac(_ index: UInt64, _ base: [UInt8], _ message: [UInt8]) throws -> [UInt8] {
        let key = SecureBytes(Gcrypt.sha512([le(index), base]))
        return try message.withUnsafeBytes { try Gcrypt.hmacSHA256(key: key, message: [$0]) }.withBytes { Array($0) }
    }

    private func field(_ id: UInt8, _ data: [UInt8]) -> [UInt8] { [id] + le(UInt32(data.count)) + data }
}

func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8)
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0...($0 + 1)], as: UTF8.self), radix: 16)! }
}
