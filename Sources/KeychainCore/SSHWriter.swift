/// Writes the SSH wire encoding (RFC 4251 §5) of public values: agent messages, key blobs and
/// signatures. Never for private keys (they stay in secure memory).
package struct SSHWriter {
    /// What has been written.
    package private(set) var bytes: [UInt8] = []

    /// An empty writer.
    package init() {}

    /// One byte.
    package mutating func byte(_ value: UInt8) {
        bytes.append(value)
    }

    /// A big-endian uint32.
    package mutating func uint32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    /// A string of `value`'s bytes.
    package mutating func string<C: Collection<UInt8>>(_ value: C) {
        uint32(UInt32(value.count))
        bytes.append(contentsOf: value)
    }

    /// A string of `text`'s UTF-8.
    package mutating func string(_ text: String) {
        string(Array(text.utf8))
    }

    /// A positive mpint of the unsigned big-endian `magnitude`.
    package mutating func mpint(_ magnitude: [UInt8]) {
        let digits = magnitude.drop { $0 == 0 }
        if let first = digits.first, first & 0x80 != 0 {
            string([0] + digits)
        } else {
            string(digits)
        }
    }

    /// An agent message: its length, `type`, then `body`'s bytes.
    package static func message(_ type: SSHAgentNames.Message, _ body: (inout SSHWriter) -> Void = { _ in }) -> [UInt8] {
        var inner = SSHWriter()
        inner.byte(type.rawValue)
        body(&inner)
        var outer = SSHWriter()
        outer.uint32(UInt32(inner.bytes.count))
        outer.bytes.append(contentsOf: inner.bytes)
        return outer.bytes
    }
}
