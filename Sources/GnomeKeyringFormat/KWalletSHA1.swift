public import SecretCrypto

/// SHA-1 as kwalletd computes it on a little-endian machine, where every KWallet file was
/// written: its own SHA-1 (backend/sha1.cc) is compiled as for a big-endian one, so it reads
/// the message (padding and length included) in 32-bit words of the machine's byte order, and
/// stores the digest's words so too. Standard SHA-1 otherwise; libgcrypt has no way to do it,
/// hence this. kwalletd checks a wallet's data with it and derived the key of files older than
/// KDE 4.13 with it (``legacyKey(password:)``). Never for anything new.
enum KWalletSHA1 {
    /// The digest of `message` into the first 20 bytes of `digest`.
    static func hash(_ message: UnsafeRawBufferPointer, into digest: UnsafeMutableRawPointer) {
        var state: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 80) { words in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { tail in
                let whole = message.count / 64
                for block in 0..<whole { compress(message.baseAddress! + 64 * block, &state, words) }
                // The last bytes, 0x80, zeros, and the length in bits (big-endian) end the message.
                let rest = message.count - 64 * whole
                _ = tail.initialize(repeating: 0)
                if rest > 0 { UnsafeMutableRawPointer(tail.baseAddress!).copyMemory(from: message.baseAddress! + 64 * whole, byteCount: rest) }
                tail[rest] = 0x80
                let blocks = rest < 56 ? 1 : 2
                let bits = UInt64(message.count) * 8
                for index in 0..<8 { tail[64 * blocks - 1 - index] = UInt8(truncatingIfNeeded: bits >> (8 * index)) }
                for block in 0..<blocks { compress(UnsafeRawPointer(tail.baseAddress! + 64 * block), &state, words) }
                _ = tail.initialize(repeating: 0)
                _ = words.initialize(repeating: 0)
            }
        }
        for (index, word) in state.enumerated() {
            for byte in 0..<4 { digest.storeBytes(of: UInt8(truncatingIfNeeded: word >> (8 * byte)), toByteOffset: 4 * index + byte, as: UInt8.self) }
        }
        for index in state.indices { state[index] = 0 }
    }

    /// One 64-byte block, its words read little-endian.
    private static func compress(_ block: UnsafeRawPointer, _ state: inout [UInt32], _ words: UnsafeMutableBufferPointer<UInt32>) {
        for index in 0..<16 {
            words[index] = (0..<4).reduce(0) { $0 | UInt32(block.load(fromByteOffset: 4 * index + $1, as: UInt8.self)) << (8 * $1) }
        }
        for index in 16..<80 {
            let mixed = words[index - 3] ^ words[index - 8] ^ words[index - 14] ^ words[index - 16]
            words[index] = mixed << 1 | mixed >> 31
        }
        var (a, b, c, d, e) = (state[0], state[1], state[2], state[3], state[4])
        for index in 0..<80 {
            let (f, k): (UInt32, UInt32) = switch index {
            case 0..<20: (d ^ (b & (c ^ d)), 0x5A82_7999)
            case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
            case 40..<60: ((b & c) | (d & (b | c)), 0x8F1B_BCDC)
            default: (b ^ c ^ d, 0xCA62_C1D6)
            }
            let next = (a << 5 | a >> 27) &+ f &+ e &+ k &+ words[index]
            (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, next)
        }
        state[0] &+= a
        state[1] &+= b
        state[2] &+= c
        state[3] &+= d
        state[4] &+= e
    }

    /// The key of a wallet of format 0.0 (before KDE 4.13; kwalletd's `password2hash`): the
    /// password in 16-byte parts, the fourth taking all the rest; each part hashed, and the
    /// digest hashed again 1,999 times; then the first part's digest (up to 16 bytes of
    /// password), the first two (up to 32), 20 + 20 + 16 bytes of three (up to 48), or 14
    /// bytes of each of four: a key of 20, 40 or 56 bytes.
    static func legacyKey(password: SecureBytes) -> SecureBytes {
        let count = password.count
        let parts = count <= 16 ? 1 : count <= 32 ? 2 : count <= 48 ? 3 : 4
        let taken: [Int] = switch parts {
        case 1: [20]
        case 2: [20, 20]
        case 3: [20, 20, 16]
        default: [14, 14, 14, 14]
        }
        let digests = SecureBytes(count: 40)
        let key = SecureBytes(count: taken.reduce(0, +))
        key.withMutableBytes { out in
            digests.withMutableBytes { scratch in
                password.withBytes { bytes in
                    var offset = 0
                    for part in 0..<parts {
                        let start = 16 * part
                        let end = part == 3 ? count : min(count, start + 16)
                        let current = scratch.baseAddress!
                        let next = scratch.baseAddress! + 20
                        hash(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), into: current)
                        for _ in 1..<2000 {
                            hash(UnsafeRawBufferPointer(start: current, count: 20), into: next)
                            current.copyMemory(from: next, byteCount: 20)
                        }
                        (out.baseAddress! + offset).copyMemory(from: current, byteCount: taken[part])
                        offset += taken[part]
                    }
                }
            }
        }
        return key
    }
}
