/// Reads the SSH wire encoding (RFC 4251 §5: bytes, uint32, string, mpint) from a buffer,
/// never past its end. Used inside the `withBytes` of the buffer it reads.
package struct SSHReader {
    /// What cannot be read.
    package enum Failure: Error, Equatable, Sendable {
        /// The buffer ends inside a field.
        case truncated
        /// A field's value is not allowed here (named).
        case malformed(String)
    }

    private let buffer: UnsafeRawBufferPointer
    /// Where the next field starts.
    package private(set) var offset = 0

    /// A reader of `buffer` from its start.
    package init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
    }

    /// Whether everything has been read.
    package var isAtEnd: Bool { offset == buffer.count }

    /// The bytes not read yet.
    package var remaining: Int { buffer.count - offset }

    /// One byte.
    package mutating func byte() throws(Failure) -> UInt8 {
        guard remaining >= 1 else { throw .truncated }
        defer { offset += 1 }
        return buffer[offset]
    }

    /// A big-endian uint32.
    package mutating func uint32() throws(Failure) -> UInt32 {
        guard remaining >= 4 else { throw .truncated }
        var value: UInt32 = 0
        for index in 0..<4 { value = value << 8 | UInt32(buffer[offset + index]) }
        offset += 4
        return value
    }

    /// A string's bytes, in place (valid while the buffer is).
    package mutating func stringBytes() throws(Failure) -> UnsafeRawBufferPointer {
        let length = Int(try uint32())
        guard length <= remaining else { throw .truncated }
        defer { offset += length }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + length)])
    }

    /// A string's bytes, copied.
    package mutating func string() throws(Failure) -> [UInt8] {
        Array(try stringBytes())
    }

    /// A string that must be UTF-8 text (a key type, a comment).
    package mutating func text() throws(Failure) -> String {
        guard let text = String(validating: try stringBytes(), as: UTF8.self) else { throw .malformed("text is not UTF-8") }
        return text
    }

    /// A string's bytes from `start` (an earlier ``offset``) up to here, in place.
    package func bytes(from start: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: buffer[min(start, offset)..<offset])
    }

    /// An mpint that must be positive (RFC 4251 §5), in place as sent: empty for zero, a
    /// leading zero byte only before a byte with its top bit set.
    package mutating func positiveMpint() throws(Failure) -> UnsafeRawBufferPointer {
        let bytes = try stringBytes()
        guard let first = bytes.first else { return bytes }
        guard first & 0x80 == 0 else { throw .malformed("a negative mpint") }
        if first == 0 {
            guard bytes.count > 1, bytes[1] & 0x80 != 0 else { throw .malformed("an mpint with a needless leading zero") }
        }
        return bytes
    }
}
