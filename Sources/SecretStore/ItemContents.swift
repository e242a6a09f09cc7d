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

    /// The attribute that names an item's access group (documented in secretd(1)).
    public static let accessGroupAttribute = "keychain:access-group"
    /// The group of items that carry no access group attribute, shared by every unconfined client.
    public static let defaultAccessGroup = "default"

    /// The access group the item belongs to.
    public var accessGroup: String { attributes[Self.accessGroupAttribute] ?? Self.defaultAccessGroup }

    /// Creates item contents.
    public init(label: String, attributes: [String: String], secret: SecureBytes, contentType: String) {
        self.label = label
        self.attributes = attributes
        self.secret = secret
        self.contentType = contentType
    }

    // MARK: - Encoding (format 1: length-prefixed fields, big-endian UInt32 lengths)

    /// The plaintext that gets sealed, in secure memory.
    package func encoded() -> SecureBytes {
        let sortedAttributes = attributes.sorted { $0.key < $1.key }
        let texts = [label, contentType] + sortedAttributes.flatMap { [$0.key, $0.value] }
        let size = 4 + texts.reduce(0) { $0 + 4 + $1.utf8.count } + 4 + secret.count
        let output = SecureBytes(count: size)
        output.withMutableBytes { buffer in
            var offset = 0
            func put(_ value: Int) {
                for shift in stride(from: 24, through: 0, by: -8) {
                    buffer[offset] = UInt8(truncatingIfNeeded: value >> shift)
                    offset += 1
                }
            }
            func put(_ text: String) {
                put(text.utf8.count)
                for byte in text.utf8 {
                    buffer[offset] = byte
                    offset += 1
                }
            }
            put(label)
            put(contentType)
            put(sortedAttributes.count)
            for (name, value) in sortedAttributes {
                put(name)
                put(value)
            }
            put(secret.count)
            secret.withBytes { bytes in
                if bytes.count > 0 {
                    UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + bytes.count)])
                        .copyMemory(from: bytes)
                }
            }
        }
        return output
    }

    /// Parses what ``encoded()`` produced; `.corrupted` for anything malformed.
    package static func decode(_ plaintext: SecureBytes) throws(StoreError) -> ItemContents {
        try plaintext.withBytes { (buffer: UnsafeRawBufferPointer) throws(StoreError) -> ItemContents in
            var offset = 0
            func number() throws(StoreError) -> Int {
                guard offset + 4 <= buffer.count else { throw .corrupted("item is truncated") }
                var value = 0
                for _ in 0..<4 {
                    value = value << 8 | Int(buffer[offset])
                    offset += 1
                }
                return value
            }
            func length() throws(StoreError) -> Int {
                let value = try number()
                guard offset + value <= buffer.count else { throw .corrupted("item is truncated") }
                return value
            }
            func text() throws(StoreError) -> String {
                let count = try length()
                defer { offset += count }
                guard let value = String(validating: buffer[offset..<(offset + count)], as: UTF8.self) else {
                    throw .corrupted("item text is not UTF-8")
                }
                return value
            }
            let label = try text()
            let contentType = try text()
            let count = try number()
            guard count <= buffer.count / 8 else { throw .corrupted("item attribute count is impossible") }
            var attributes: [String: String] = [:]
            for _ in 0..<count {
                let name = try text()
                attributes[name] = try text()
            }
            let secretLength = try length()
            let secret = SecureBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + secretLength)]))
            offset += secretLength
            guard offset == buffer.count else { throw .corrupted("item has trailing bytes") }
            return ItemContents(label: label, attributes: attributes, secret: secret, contentType: contentType)
        }
    }
}
