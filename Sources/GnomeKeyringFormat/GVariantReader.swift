/// Reads GVariant's serialised form (little-endian), as far as libsecret's and oo7's version 1
/// keyring files need it: tuples, arrays and dictionary entries of fixed and variable-sized
/// members, strings, bytes and numbers. The rules (GLib's "GVariant Serialisation" text):
///
/// - a member is aligned to its type's alignment (1 for bytes, strings and the containers
///   here, 4 for `u`, 8 for `t`), counted from the start of its container;
/// - a container ends each of its variable-sized members but the last with a framing offset,
///   stored at its end in reverse order (the first member's last); an array of variable-sized
///   elements ends every element so, in order, after the elements;
/// - an offset takes 1, 2, 4 or 8 bytes: the fewest that can count the container's size.
///
/// Every offset is checked against its container: a damaged file gives an error, never a read
/// outside the bytes.
struct GVariantReader {
    /// The bytes of one value.
    let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// How a container's member is laid out.
    enum Member {
        /// A member of this size and alignment (`u`: 4, 4; `t`: 8, 8).
        case fixed(size: Int, alignment: Int)
        /// A member whose size varies (strings, arrays, these tuples), aligned to 1.
        case variable
    }

    /// The members of a tuple or dictionary entry laid out as `members`.
    func tuple(_ members: [Member]) throws(GnomeKeyringError) -> [GVariantReader] {
        let width = Self.offsetWidth(bytes.count)
        let framed = members.dropLast().filter { if case .variable = $0 { true } else { false } }.count
        var framingEnd = bytes.count
        let membersEnd = bytes.count - framed * width
        guard membersEnd >= 0 else { throw .damaged("a value too short for its framing") }
        var start = 0
        var result: [GVariantReader] = []
        for (index, member) in members.enumerated() {
            let end: Int
            switch member {
            case .fixed(let size, let alignment):
                start = Self.align(start, alignment)
                end = start + size
            case .variable:
                if index == members.count - 1 {
                    end = membersEnd
                } else {
                    framingEnd -= width
                    end = offset(at: framingEnd, width: width)
                }
            }
            guard start <= end, end <= membersEnd else { throw .damaged("a framing offset outside its value") }
            result.append(GVariantReader(UnsafeRawBufferPointer(rebasing: bytes[start..<end])))
            start = end
        }
        return result
    }

    /// The elements of an array of variable-sized elements (aligned to 1).
    func variableArray() throws(GnomeKeyringError) -> [GVariantReader] {
        guard bytes.count > 0 else { return [] }
        let width = Self.offsetWidth(bytes.count)
        guard bytes.count >= width else { throw .damaged("an array too short for its framing") }
        let elementsEnd = offset(at: bytes.count - width, width: width)
        guard elementsEnd >= 0, elementsEnd <= bytes.count, (bytes.count - elementsEnd) % width == 0 else { throw .damaged("an array's framing is wrong") }
        let count = (bytes.count - elementsEnd) / width
        var start = 0
        var result: [GVariantReader] = []
        result.reserveCapacity(count)
        for index in 0..<count {
            let end = offset(at: elementsEnd + index * width, width: width)
            guard start <= end, end <= elementsEnd else { throw .damaged("an array element outside its array") }
            result.append(GVariantReader(UnsafeRawBufferPointer(rebasing: bytes[start..<end])))
            start = end
        }
        return result
    }

    /// A `u`.
    func uint32() throws(GnomeKeyringError) -> UInt32 {
        guard bytes.count == 4 else { throw .damaged("a number of \(bytes.count) bytes") }
        return bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A `t`.
    func uint64() throws(GnomeKeyringError) -> UInt64 {
        guard bytes.count == 8 else { throw .damaged("a number of \(bytes.count) bytes") }
        return bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// An `s`: UTF-8 text ended by its one NUL byte.
    func string() throws(GnomeKeyringError) -> String {
        guard let last = bytes.last, last == 0 else { throw .damaged("a string without its end") }
        let text = UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count - 1)])
        guard !text.contains(0), let string = String(validating: text, as: UTF8.self) else {
            throw .damaged("a string that is not UTF-8 text")
        }
        return string
    }

    /// The bytes of a value whose type needs none of the above (`ay`).
    func byteString() -> UnsafeRawBufferPointer { bytes }

    /// The framing offset of `width` bytes at `position`.
    private func offset(at position: Int, width: Int) -> Int {
        var value = 0
        for index in (0..<width).reversed() { value = value << 8 | Int(bytes[position + index]) }
        return value
    }

    /// The width of the framing offsets of a container of `size` bytes.
    static func offsetWidth(_ size: Int) -> Int {
        switch size {
        case 0...0xff: 1
        case 0x100...0xffff: 2
        case 0x1_0000...0xffff_ffff: 4
        default: 8
        }
    }

    private static func align(_ offset: Int, _ alignment: Int) -> Int {
        (offset + alignment - 1) / alignment * alignment
    }
}
