package import KeychainCore
public import SecretCrypto

/// The sealed part of an item: everything but its identity and timestamps.
public struct ItemContents: Sendable {
    /// The label (sealed, so it is unreadable while the collection is locked).
    public var label: String
    /// The attributes (the full values are sealed; a hash of each is kept for locked search).
    public var attributes: [String: String]
    /// The secret, in secure memory.
    public var secret: SecureBytes
    /// The secret's content type, such as `text/plain`.
    public var contentType: String

    /// The access group the item belongs to (AccessGroupNames: the attribute, or `default`).
    public var accessGroup: String { attributes[AccessGroupNames.attribute] ?? AccessGroupNames.defaultGroup }

    /// The accessibility class (ItemAccessibility: the attribute, or `when-unlocked`), which
    /// decides the key the item is sealed with (``Store/ItemKeys``).
    package var accessibility: ItemAccessibility { ItemAccessibility(attributes: attributes) }

    /// The bytes of its secret, label and attributes (names and values): what sealing it and
    /// writing its row cost grows with.
    public var byteCount: Int { Self.byteCount(secret: secret.count, label: label, attributes: attributes) }

    /// ``byteCount`` of contents with a secret of `secret` bytes, `label` and `attributes`,
    /// for contents whose secret is not yet decoded.
    public static func byteCount(secret: Int, label: String, attributes: [String: String]) -> Int {
        secret + label.utf8.count + attributes.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
    }

    /// Creates item contents.
    public init(label: String, attributes: [String: String], secret: SecureBytes, contentType: String) {
        self.label = label
        self.attributes = attributes
        self.secret = secret
        self.contentType = contentType
    }

    // MARK: - Encoding
    //
    // Format 3 (written): a 0x03 byte, then label, content type, the attribute count, each
    // attribute's name and value (sorted by name), and the secret as the rest of the bytes.
    // Texts are preceded by their length; lengths and the count are LEB128 varints. The
    // content type's "length" n stands for one of ``commonContentTypes`` when n is below their
    // count, else for a text of n minus that count bytes: the usual `text/plain` takes 1 byte.
    // Format 2 (still read): a 0x02 byte, then the same fields with the content type always a
    // text and the secret preceded by its length.
    // Format 1 (still read): format 2's fields with big-endian UInt32 lengths and count. Its
    // first byte is the top byte of the label's length, which is 0 for any label under 16 MiB.

    /// Which layout ``encoded(format:)`` writes.
    package enum Format: UInt8, Sendable {
        /// UInt32 lengths; written by schema versions 1 and 2.
        case fixedLengths = 1
        /// Varint lengths after a format byte: 20 to 30 bytes smaller per item; written by
        /// schema version 3.
        case varintLengths = 2
        /// Format 2 with common content types in one byte and no secret length: 11 bytes
        /// smaller for a `text/plain` item.
        case compact = 3
    }

    /// The content types format 3 writes as one byte, by their index. Never reorder it; a
    /// type may only be added at the end.
    static let commonContentTypes = ["text/plain", "application/octet-stream"]

    /// The plaintext that gets sealed, in secure memory.
    package func encoded(format: Format = .compact) -> SecureBytes {
        let sortedAttributes = attributes.sorted { $0.key < $1.key }
        let commonType = format == .compact ? Self.commonContentTypes.firstIndex(of: contentType) : nil
        let contentTypeCode = commonType ?? (contentType.utf8.count + (format == .compact ? Self.commonContentTypes.count : 0))
        func size(of number: Int) -> Int {
            format == .fixedLengths ? 4 : Self.varintSize(number)
        }
        func size(of text: String) -> Int { size(of: text.utf8.count) + text.utf8.count }
        let header = format == .fixedLengths ? 0 : 1
        let secretLength = format == .compact ? 0 : size(of: secret.count)
        let size = header + size(of: label) + size(of: contentTypeCode) + (commonType == nil ? contentType.utf8.count : 0)
            + size(of: sortedAttributes.count) + sortedAttributes.reduce(0) { $0 + size(of: $1.key) + size(of: $1.value) }
            + secretLength + secret.count
        let output = SecureBytes(count: size)
        output.withMutableBytes { buffer in
            var offset = 0
            func put(_ value: Int) {
                if format == .fixedLengths {
                    for shift in stride(from: 24, through: 0, by: -8) {
                        buffer[offset] = UInt8(truncatingIfNeeded: value >> shift)
                        offset += 1
                    }
                    return
                }
                var rest = UInt(value)
                while rest >= 0x80 {
                    buffer[offset] = UInt8(truncatingIfNeeded: rest) | 0x80
                    offset += 1
                    rest >>= 7
                }
                buffer[offset] = UInt8(rest)
                offset += 1
            }
            func putBytes(_ text: String) {
                for byte in text.utf8 {
                    buffer[offset] = byte
                    offset += 1
                }
            }
            func put(_ text: String) {
                put(text.utf8.count)
                putBytes(text)
            }
            if format != .fixedLengths {
                buffer[offset] = format.rawValue
                offset += 1
            }
            put(label)
            put(contentTypeCode)
            if commonType == nil { putBytes(contentType) }
            put(sortedAttributes.count)
            for (name, value) in sortedAttributes {
                put(name)
                put(value)
            }
            if format != .compact { put(secret.count) }
            secret.withBytes { bytes in
                if bytes.count > 0 {
                    UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + bytes.count)])
                        .copyMemory(from: bytes)
                }
            }
        }
        return output
    }

    /// Bytes a LEB128 varint of `number` takes.
    private static func varintSize(_ number: Int) -> Int {
        var size = 1
        var rest = UInt(number) >> 7
        while rest > 0 {
            size += 1
            rest >>= 7
        }
        return size
    }

    /// Parses what ``encoded(format:)`` produced, in either format; `.corrupted` for anything
    /// malformed.
    package static func decode(_ plaintext: SecureBytes) throws(StoreError) -> ItemContents {
        try plaintext.withBytes { (buffer: UnsafeRawBufferPointer) throws(StoreError) -> ItemContents in
            guard let first = buffer.first else { throw .corrupted("item is truncated") }
            let format: Format
            var offset = 0
            switch first {
            case 0: format = .fixedLengths
            case Format.varintLengths.rawValue, Format.compact.rawValue:
                format = first == Format.compact.rawValue ? .compact : .varintLengths
                offset = 1
            default: throw .corrupted("item format \(first) is unknown")
            }
            func number() throws(StoreError) -> Int {
                var value = 0
                if format == .fixedLengths {
                    guard offset + 4 <= buffer.count else { throw .corrupted("item is truncated") }
                    for _ in 0..<4 {
                        value = value << 8 | Int(buffer[offset])
                        offset += 1
                    }
                    return value
                }
                // At most 5 groups of 7 bits: lengths are below 2^32, as in format 1.
                for shift in stride(from: 0, through: 28, by: 7) {
                    guard offset < buffer.count else { throw .corrupted("item is truncated") }
                    let byte = buffer[offset]
                    offset += 1
                    value |= Int(byte & 0x7f) << shift
                    if byte & 0x80 == 0 { return value }
                }
                throw .corrupted("item length is too long")
            }
            func length() throws(StoreError) -> Int {
                let value = try number()
                guard value <= buffer.count - offset else { throw .corrupted("item is truncated") }
                return value
            }
            func bytesAsText(_ count: Int) throws(StoreError) -> String {
                guard count <= buffer.count - offset else { throw .corrupted("item is truncated") }
                defer { offset += count }
                guard let value = String(validating: buffer[offset..<(offset + count)], as: UTF8.self) else {
                    throw .corrupted("item text is not UTF-8")
                }
                return value
            }
            func text() throws(StoreError) -> String { try bytesAsText(try number()) }
            let label = try text()
            let contentType: String
            if format == .compact {
                let code = try number()
                let common = Self.commonContentTypes
                contentType = code < common.count ? common[code] : try bytesAsText(code - common.count)
            } else {
                contentType = try text()
            }
            let count = try number()
            // Each attribute takes at least two length bytes (eight in format 1).
            guard count <= buffer.count / (format == .fixedLengths ? 8 : 2) else {
                throw .corrupted("item attribute count is impossible")
            }
            var attributes: [String: String] = [:]
            for _ in 0..<count {
                let name = try text()
                attributes[name] = try text()
            }
            let secretLength = format == .compact ? buffer.count - offset : try length()
            let secret = SecureBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + secretLength)]))
            offset += secretLength
            guard offset == buffer.count else { throw .corrupted("item has trailing bytes") }
            return ItemContents(label: label, attributes: attributes, secret: secret, contentType: contentType)
        }
    }
}
