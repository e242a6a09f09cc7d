import Foundation
import Testing

@testable import SecretCrypto

@Suite struct Crypto {
    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    func hex(_ bytes: SecureBytes) -> String { bytes.withBytes { hex(Array($0)) } }

    @Test("Argon2id matches the RFC 9106 §5.3 test vector")
    func argon2Vector() throws {
        let password = [UInt8](repeating: 1, count: 32)
        let key = try password.withUnsafeBytes { bytes in
            try Gcrypt.argon2id(
                password: bytes, salt: [UInt8](repeating: 2, count: 16),
                parameters: KDFParameters(iterations: 3, memoryKiB: 32, lanes: 4),
                secret: [UInt8](repeating: 3, count: 8), associatedData: [UInt8](repeating: 4, count: 12))
        }
        #expect(hex(key) == "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659")
    }

    @Test("Argon2d (for KeePass databases) matches the RFC 9106 §5.1 test vector")
    func argon2dVector() throws {
        let password = [UInt8](repeating: 1, count: 32)
        let key = try password.withUnsafeBytes { bytes in
            try Gcrypt.argon2(
                .argon2d, password: bytes, salt: [UInt8](repeating: 2, count: 16),
                parameters: KDFParameters(iterations: 3, memoryKiB: 32, lanes: 4),
                secret: [UInt8](repeating: 3, count: 8), associatedData: [UInt8](repeating: 4, count: 12))
        }
        #expect(hex(key) == "512b391b6f1162975371d30919734294f868e3be3984f3c1a13a4db9fabe4acb")
    }

    @Test("ChaCha20 (KeePass's cipher and inner stream) matches RFC 8439's first keystream vector, across calls")
    func chaCha20Vector() throws {
        let stream = try Gcrypt.KeyStream(.chaCha20, key: [UInt8](repeating: 0, count: 32), nonce: [UInt8](repeating: 0, count: 12))
        var first = [UInt8](repeating: 0, count: 5)
        var rest = [UInt8](repeating: 0, count: 59)
        try first.withUnsafeMutableBytes { try stream.apply($0) }
        try rest.withUnsafeMutableBytes { try stream.apply($0) }
        #expect(hex(first + rest) == "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586")
        #expect(throws: CryptoError.self) { try Gcrypt.KeyStream(.salsa20, key: [UInt8](repeating: 0, count: 32), nonce: [UInt8](repeating: 0, count: 12)) }
    }

    @Test("Argon2id refuses parameters beyond the limits (at most 10 passes, 256 MiB, 16 lanes)")
    func argon2Limits() {
        #expect(KDFParameters.standard.isWithinLimits && KDFParameters.testing.isWithinLimits)
        for parameters in [
            KDFParameters(iterations: 0, memoryKiB: 64, lanes: 1), KDFParameters(iterations: 11, memoryKiB: 64, lanes: 1),
            KDFParameters(iterations: 1, memoryKiB: 256 * 1024 + 1, lanes: 1), KDFParameters(iterations: 1, memoryKiB: 64, lanes: 17),
            KDFParameters(iterations: 1, memoryKiB: 31, lanes: 4), KDFParameters(iterations: 1, memoryKiB: -64, lanes: -1),
        ] {
            #expect(!parameters.isWithinLimits, "\(parameters)")
            #expect(KDFParameters(checkingIterations: parameters.iterations, memoryKiB: parameters.memoryKiB, lanes: parameters.lanes) == nil)
            #expect(throws: CryptoError.invalidInput("Argon2id parameters are out of range")) {
                try [UInt8(1)].withUnsafeBytes { try Gcrypt.argon2id(password: $0, salt: [UInt8](repeating: 2, count: 16), parameters: parameters) }
            }
        }
    }

    @Test("X25519 matches RFC 7748 §6.1; a low-order or short public key is refused")
    func x25519() throws {
        func bytes(_ hex: String) -> [UInt8] {
            stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
        }
        let alice = SecureBytes(bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        let bob = SecureBytes(bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
        let alicePublic = try Gcrypt.x25519PublicKey(of: alice)
        let bobPublic = try Gcrypt.x25519PublicKey(of: bob)
        #expect(hex(alicePublic) == "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        #expect(hex(bobPublic) == "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        let shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
        #expect(hex(try Gcrypt.x25519SharedSecret(alice, peerPublicKey: bobPublic)) == shared)
        #expect(hex(try Gcrypt.x25519SharedSecret(bob, peerPublicKey: alicePublic)) == shared)
        #expect(throws: CryptoError.invalidInput("the X25519 public key is of low order")) {
            try Gcrypt.x25519SharedSecret(alice, peerPublicKey: [UInt8](repeating: 0, count: 32))
        }
        #expect(throws: CryptoError.invalidInput("an X25519 public key has 32 bytes")) {
            try Gcrypt.x25519SharedSecret(alice, peerPublicKey: [1, 2, 3])
        }
    }

    @Test("AES-256-GCM matches NIST test case 14, and tampering is detected")
    func gcmVector() throws {
        let key = SecureBytes([UInt8](repeating: 0, count: 32))
        let plaintext = [UInt8](repeating: 0, count: 16)
        let sealed = try plaintext.withUnsafeBytes { bytes in
            try Gcrypt.seal(bytes, key: key, associatedData: [], nonce: [UInt8](repeating: 0, count: 12))
        }
        #expect(hex(Array(sealed[12..<28])) == "cea7403d4d606b6e074ec5d3baf39d18")
        #expect(hex(Array(sealed[28...])) == "d0d1c8a799996bf0265b98b5d48ab919")
        #expect(hex(try Gcrypt.open(sealed, key: key, associatedData: [])) == hex(plaintext))

        var flipped = sealed
        flipped[20] ^= 1
        #expect(throws: CryptoError.authenticationFailed) {
            try Gcrypt.open(flipped, key: key, associatedData: [])
        }
        #expect(throws: CryptoError.authenticationFailed) {
            try Gcrypt.open(sealed, key: key, associatedData: [1])
        }
        #expect(throws: CryptoError.corrupted("sealed value is truncated")) {
            try Gcrypt.open(Array(sealed[0..<20]), key: key, associatedData: [])
        }
    }

    @Test("sealing in place gives what sealing a copy gives (NIST test case 14 too), at any length; a buffer with no room for nonce and tag is refused")
    func sealInPlace() throws {
        let zero = SecureBytes([UInt8](repeating: 0, count: 32))
        var buffer = [UInt8](repeating: 0, count: 12 + 16 + 16)
        try buffer.withUnsafeMutableBytes { try Gcrypt.sealInPlace($0, key: zero, associatedData: [], nonce: [UInt8](repeating: 0, count: 12)) }
        #expect(hex(Array(buffer[12..<28])) == "cea7403d4d606b6e074ec5d3baf39d18")
        #expect(hex(Array(buffer[28...])) == "d0d1c8a799996bf0265b98b5d48ab919")

        let key = Gcrypt.randomKey()
        let nonce = Gcrypt.randomBytes(count: 12)
        for length in [0, 1, 15, 16, 17, 1000, 65_537] {
            let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 31 + 7) }
            let copied = try plaintext.withUnsafeBytes { try Gcrypt.seal($0, key: key, associatedData: [1, 2], nonce: nonce) }
            var inPlace = [UInt8](repeating: 0xAA, count: 12) + plaintext + [UInt8](repeating: 0xAA, count: 16)
            try inPlace.withUnsafeMutableBytes { try Gcrypt.sealInPlace($0, key: key, associatedData: [1, 2], nonce: nonce) }
            #expect(inPlace == copied, "length \(length)")
            var fresh = [UInt8](repeating: 0, count: 12) + plaintext + [UInt8](repeating: 0, count: 16)
            try fresh.withUnsafeMutableBytes { try Gcrypt.sealInPlace($0, key: key, associatedData: [3]) }
            #expect(try Gcrypt.open(fresh, key: key, associatedData: [3]).withBytes { Array($0) } == plaintext)
        }
        var short = [UInt8](repeating: 0, count: 27)
        #expect(throws: CryptoError.self) { try short.withUnsafeMutableBytes { try Gcrypt.sealInPlace($0, key: key, associatedData: []) } }
    }

    @Test("sealing the same plaintext twice uses fresh nonces; empty plaintexts work")
    func freshNonces() throws {
        let key = Gcrypt.randomKey()
        let first = try [UInt8]("same".utf8).withUnsafeBytes { try Gcrypt.seal($0, key: key, associatedData: []) }
        let second = try [UInt8]("same".utf8).withUnsafeBytes { try Gcrypt.seal($0, key: key, associatedData: []) }
        #expect(first != second)
        let empty = try [UInt8]().withUnsafeBytes { try Gcrypt.seal($0, key: key, associatedData: [9]) }
        #expect(try Gcrypt.open(empty, key: key, associatedData: [9]).count == 0)
    }

    @Test("SHA-256 of 'abc'")
    func sha256() {
        #expect(hex(Gcrypt.sha256(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}

/// Secure buffers, large and small, are locked in memory and kept out of core dumps; small ones
/// come from a pool that hands out and takes back blocks whatever the number alive.
@Suite struct SecureMemoryTests {
    /// One mapping of /proc/self/smaps: its address range and its fields (name: rest of line).
    struct Mapping {
        let start: UInt
        let end: UInt
        var fields: [String: String] = [:]
    }

    /// The process's mappings, from /proc/self/smaps.
    static func mappings() -> [Mapping] {
        // Read to the end: Foundation's String(contentsOfFile:) stops after a page of a /proc file.
        let data = FileHandle(forReadingAtPath: "/proc/self/smaps").map { $0.readDataToEndOfFile() } ?? Data()
        var found: [Mapping] = []
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.contains("-"), !first.hasSuffix(":") {
                let bounds = first.split(separator: "-").compactMap { UInt($0, radix: 16) }
                if bounds.count == 2 { found.append(Mapping(start: bounds[0], end: bounds[1])) }
            } else if first.hasSuffix(":"), !found.isEmpty {
                found[found.count - 1].fields[String(first)] = fields.dropFirst().joined(separator: " ")
            }
        }
        return found
    }

    /// The `Locked` KiB of the mappings that hold any of the `count` bytes at `address` (other
    /// tests map and unmap meanwhile, and the kernel may join neighbouring mappings or split
    /// them; the bytes are locked when these add up to their size). The most of a few reads.
    static func lockedKiB(of address: UnsafeMutableRawPointer, count: Int = 1) -> Int {
        let (first, last) = (UInt(bitPattern: address), UInt(bitPattern: address) + UInt(max(count, 1)))
        var most = 0
        for _ in 0..<5 {
            let locked = mappings().filter { $0.start < last && first < $0.end }
                .reduce(0) { $0 + (Int($1.fields["Locked:"]?.split(separator: " ").first ?? "") ?? 0) }
            most = max(most, locked)
            if most * 1024 >= count { break }
        }
        return most
    }

    /// Whether the mapping that holds `address` is left out of core dumps (VmFlags `dd`).
    static func keptOutOfDumps(_ address: UnsafeMutableRawPointer) -> Bool {
        let target = UInt(bitPattern: address)
        return mappings().first { $0.start <= target && target < $0.end }?.fields["VmFlags:"]?.split(separator: " ").contains("dd") ?? false
    }

    @Test("buffers of megabytes are zeroed and their pages locked and kept out of core dumps; so are small ones")
    func largeBuffersAreLocked() throws {
        let buffers = (0..<3).map { _ in SecureBytes(count: 2 << 20) }
        for buffer in buffers {
            let locked = Self.lockedKiB(of: buffer.pointer, count: buffer.count)
            #expect(locked >= 2048, "a 2 MiB buffer has \(locked) KiB locked")
            #expect(Self.keptOutOfDumps(buffer.pointer))
            #expect(buffer.withBytes { $0.allSatisfy { $0 == 0 } })
            buffer.withMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0xa5) }
            #expect(buffer.withBytes { $0.allSatisfy { $0 == 0xa5 } })
        }
        let small = SecureBytes([1, 2, 3])
        #expect(small.withBytes { Array($0) } == [1, 2, 3])
        #expect(Self.lockedKiB(of: small.pointer) > 0, "the pool of small buffers is not locked")
        #expect(Self.keptOutOfDumps(small.pointer))
    }

    @Test("small buffers of every size: many alive at once, each zeroed, apart from the others, and a freed block comes back zeroed")
    func manySmallBuffers() throws {
        var alive: [SecureBytes] = []
        for index in 0..<20_000 {
            let count = index % 500 == 0 ? [1000, 4096, 40_000, 65_535][index / 500 % 4] : [0, 1, 15, 16, 17, 32, 100][index % 7]
            let buffer = SecureBytes(count: count)
            #expect(buffer.withBytes { $0.allSatisfy { $0 == 0 } })
            buffer.withMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: UInt8(truncatingIfNeeded: index)) }
            alive.append(buffer)
        }
        for (index, buffer) in alive.enumerated() {
            #expect(buffer.withBytes { $0.allSatisfy { $0 == UInt8(truncatingIfNeeded: index) } })
        }
        let pointers = Set(alive.map { UInt(bitPattern: $0.pointer) })
        #expect(pointers.count == alive.count)
        let last = alive.last!
        #expect(Self.lockedKiB(of: last.pointer) > 0 && Self.keptOutOfDumps(last.pointer))
        // Given back and taken again (the blocks are reused): they hold nothing of before.
        alive.removeAll()
        for count in [1, 16, 100, 4096, 65_535] {
            let again = SecureBytes(count: count)
            #expect(again.withBytes { $0.allSatisfy { $0 == 0 } })
        }
    }
}
