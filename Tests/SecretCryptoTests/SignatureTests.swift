import Foundation
import Testing

@testable import SecretCrypto

/// The SSH agent's signatures (Gcrypt+Signatures.swift) against published known answers.
@Suite struct SignatureTests {
    func bytes(_ hex: String) -> [UInt8] {
        var output: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            output.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return output
    }

    @Test("Ed25519 matches RFC 8032 §7.1 test 1 (a seed whose first byte has its top bit set) and verifies")
    func ed25519Vector() throws {
        let seed = SecureBytes(bytes("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
        let publicKey = bytes("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        let signature = try Gcrypt.ed25519Sign(seed: seed, publicKey: publicKey, message: [])
        #expect(signature == bytes(
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"))
        #expect(Gcrypt.ed25519Verify(publicKey: publicKey, message: [], signature: signature))
        #expect(!Gcrypt.ed25519Verify(publicKey: publicKey, message: [1], signature: signature))
    }

    @Test("Ed25519 matches RFC 8032 §7.1 test 2 (a one-byte message)")
    func ed25519Vector2() throws {
        let seed = SecureBytes(bytes("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"))
        let publicKey = bytes("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
        let signature = try Gcrypt.ed25519Sign(seed: seed, publicKey: publicKey, message: [0x72])
        #expect(signature == bytes(
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"))
    }

    @Test("ECDSA P-256 with SHA-256 matches RFC 6979 A.2.5 (deterministic nonce) and verifies")
    func ecdsaP256Vector() throws {
        let d = SecureBytes(bytes("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721"))
        let point = [4] + bytes("60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6")
            + bytes("7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299")
        let message = Array("sample".utf8)
        let (r, s) = try Gcrypt.ecdsaSign(curve: .p256, privateKey: d, publicPoint: point, message: message)
        #expect(r == bytes("efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"))
        #expect(s == bytes("f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8"))
        #expect(Gcrypt.ecdsaVerify(curve: .p256, publicPoint: point, message: message, r: r, s: s))
        #expect(!Gcrypt.ecdsaVerify(curve: .p256, publicPoint: point, message: Array("other".utf8), r: r, s: s))
    }

    @Test("a private scalar with a leading zero byte (an SSH mpint) signs the same")
    func ecdsaMpintScalar() throws {
        let d = SecureBytes([0] + bytes("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721"))
        let point = [4] + bytes("60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6")
            + bytes("7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299")
        let (r, _) = try Gcrypt.ecdsaSign(curve: .p256, privateKey: d, publicPoint: point, message: Array("sample".utf8))
        #expect(r == bytes("efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"))
    }

    @Test("malformed keys are refused with invalidInput, not a crash")
    func refusals() {
        #expect(throws: CryptoError.self) {
            try Gcrypt.ed25519Sign(seed: SecureBytes(count: 31), publicKey: [UInt8](repeating: 0, count: 32), message: [])
        }
        #expect(throws: CryptoError.self) {
            try Gcrypt.ecdsaSign(curve: .p384, privateKey: SecureBytes([1]), publicPoint: [4, 1, 2], message: [])
        }
    }

    @Test("SHA-1, SHA-384 and SHA-512 digests have their lengths")
    func digests() {
        #expect(Gcrypt.hash([], with: .sha1).count == 20)
        #expect(Gcrypt.hash([], with: .sha384).count == 48)
        #expect(Gcrypt.hash(Array("abc".utf8), with: .sha512).prefix(4) == [0xdd, 0xaf, 0x35, 0xa1])
    }
}
