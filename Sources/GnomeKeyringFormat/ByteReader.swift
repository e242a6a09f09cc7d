/// Reads the big-endian numbers, length-prefixed strings and byte arrays of gnome-keyring's
/// binary format (its `EggBuffer`), and of KWallet's files (Qt's QDataStream, alike), from a
/// buffer, refusing to read past its end.
struct ByteReader {
    private let bytes: UnsafeRawBufferPointer
    /// Where the next read starts.
    private(set) var offset: Int

    init(_ bytes: UnsafeRawBufferPointer, from offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    /// How many bytes are left.
    var remaining: Int { bytes.count - offset }

    /// The next `count` bytes.
    mutating func take(_ count: Int) throws(GnomeKeyringError) -> UnsafeRawBufferPointer {
        guard count >= 0, count <= remaining else { throw .damaged("it ends early (truncated?)") }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
    }

    mutating func byte() throws(GnomeKeyringError) -> UInt8 {
        try take(1)[0]
    }

    mutating func uint32() throws(GnomeKeyringError) -> UInt32 {
        try take(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A time: seconds since 1970 as two 32-bit halves, the high one first.
    mutating func time() throws(GnomeKeyringError) -> UInt64 {
        let high = try uint32()
        return UInt64(high) << 32 | UInt64(try uint32())
    }

    /// A byte array: its length (0xffffffff for none, read as empty) and its bytes.
    mutating func byteArray() throws(GnomeKeyringError) -> UnsafeRawBufferPointer {
        let length = try uint32()
        if length == 0xffff_ffff { return UnsafeRawBufferPointer(start: nil, count: 0) }
        guard length < 0x7fff_ffff else { throw .damaged("a length of \(length) bytes") }
        return try take(Int(length))
    }

    /// A UTF-8 string without NUL bytes; nil when the file holds none (length 0xffffffff).
    mutating func string() throws(GnomeKeyringError) -> String? {
        let length = try uint32()
        if length == 0xffff_ffff { return nil }
        guard length < 0x7fff_ffff else { throw .damaged("a string of \(length) bytes") }
        let raw = try take(Int(length))
        guard !raw.contains(0), let text = String(validating: raw, as: UTF8.self) else {
            throw .damaged("a string that is not UTF-8 text")
        }
        return text
    }

    /// Skips `count` 32-bit words.
    mutating func skipWords(_ count: Int) throws(GnomeKeyringError) {
        _ = try take(4 * count)
    }
}
