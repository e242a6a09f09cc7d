import Foundation

/// Reads a fuzz input as a sequence of choices and values; past the end it yields zeros and
/// empty values, so every input is usable.
struct FuzzInput {
    private let bytes: [UInt8]
    private var offset = 0

    /// An input over `data`.
    init(_ data: Data) { bytes = Array(data) }

    /// The next byte (0 past the end).
    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next 8 bytes as a big-endian signed integer.
    mutating func integer() -> Int64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
        return Int64(bitPattern: value)
    }

    /// The next `count` bytes (fewer at the end).
    mutating func bytes(_ count: Int) -> [UInt8] {
        let taken = Array(bytes[offset..<min(offset + count, bytes.count)])
        offset += taken.count
        return taken
    }

    /// A byte-length-prefixed run of bytes.
    mutating func shortBytes() -> [UInt8] { bytes(Int(byte())) }

    /// Everything not read yet.
    mutating func rest() -> [UInt8] { bytes(bytes.count - offset) }
}
