import Glibc

/// Items as one `ay` for secretd's bulk calls, rather than a D-Bus value for every label,
/// attribute and secret part, which GDBus and sd-bus build, walk and free one by one (at
/// 100,000 items, most of an import's or a listing's time outside the store); a byte array
/// they copy whole. Both ends have only this file's rule:
/// - `Import1.ImportPackedItems` (`secretctl import`): the library packs a batch
///   (``Writer/append(label:attributes:parameters:value:contentType:)``), secretd unpacks it
///   (``unpack(_:)``);
/// - `Import1.ReadPackedItems` (`secretctl export`, `list`, `search`): secretd packs the items
///   read (``Writer/append(read:)``), the library unpacks them (``unpackRead(_:)``).
///
/// The layout, every count and length a little-endian `UInt32` (a time two of them, low first),
/// every text UTF-8 with no NUL: the object path of the session that encoded every secret
/// (length, bytes); how many items; then each item:
/// - for a batch: its label; how many attributes, then each name and value; its secret as the
///   session encoded it: the parameters, the value (length, bytes each), the content type;
/// - for items read: its object path; its flags (1: locked, 2: a secret follows); when it was
///   created and modified (seconds since 1970); its label and attributes as above; and when
///   flag 2 is set its secret as above.
package enum PackedItems {
    /// One item as packed: its secret as its session encoded it (`(oayays)` without the path).
    package struct Item: Sendable {
        /// The label.
        package var label: String
        /// The attributes.
        package var attributes: [String: String]
        /// The secret's parameters (an encrypted session's IV).
        package var parameters: DBusBytes
        /// The secret as sent (encrypted, in an encrypted session).
        package var value: DBusBytes
        /// The secret's content type.
        package var contentType: String
    }

    /// One item as read (``unpackRead(_:)``): a locked one has no label, attributes or secret.
    package struct ReadItem: Sendable {
        /// Its object path.
        package var path: String
        /// Whether it is locked.
        package var isLocked: Bool
        /// When it was created and last modified (seconds since 1970).
        package var created: UInt64
        package var modified: UInt64
        /// The label.
        package var label: String
        /// The attributes.
        package var attributes: [String: String]
        /// Its secret as the session encoded it, when asked for and unlocked.
        package var secret: (parameters: DBusBytes, value: DBusBytes, contentType: String)?

        /// An item read, with all it has.
        package init(
            path: String, isLocked: Bool, created: UInt64, modified: UInt64, label: String, attributes: [String: String],
            secret: (parameters: DBusBytes, value: DBusBytes, contentType: String)?
        ) {
            (self.path, self.isLocked, self.created, self.modified) = (path, isLocked, created, modified)
            (self.label, self.attributes, self.secret) = (label, attributes, secret)
        }
    }

    /// Flags of an item read.
    private static let lockedFlag: UInt32 = 1, secretFlag: UInt32 = 2

    /// Why bytes are not packed items.
    package enum Malformed: Error, Equatable, CustomStringConvertible {
        /// A count or length runs past the end.
        case truncated
        /// A text is not UTF-8, or holds a NUL.
        case invalidText
        /// Bytes follow the last item.
        case trailingBytes

        package var description: String {
            switch self {
            case .truncated: return "a count or length runs past the end of the packed items"
            case .invalidText: return "a text of the packed items is not UTF-8 or holds a NUL"
            case .trailingBytes: return "bytes follow the last of the packed items"
            }
        }
    }

    /// The session path and items read of `packed`, or why they are not packed items read.
    package static func unpackRead(_ packed: DBusBytes) throws(Malformed) -> (sessionPath: String, items: [ReadItem]) {
        try packed.withUnsafeBytes { (bytes) throws(Malformed) in
            var reader = Reader(packed: bytes)
            let sessionPath = try reader.text()
            let count = try reader.count(eachAtLeast: 9 * 4)
            var items: [ReadItem] = []
            items.reserveCapacity(count)
            for _ in 0..<count {
                let path = try reader.text()
                let flags = try reader.number()
                let created = try reader.time(), modified = try reader.time()
                let label = try reader.text()
                let attributes = try reader.attributes()
                var secret: (DBusBytes, DBusBytes, String)?
                if UInt32(flags) & secretFlag != 0 { secret = (try reader.bytes(), try reader.bytes(), try reader.text()) }
                items.append(ReadItem(
                    path: path, isLocked: UInt32(flags) & lockedFlag != 0, created: created, modified: modified, label: label,
                    attributes: attributes, secret: secret))
            }
            guard reader.offset == bytes.count else { throw .trailingBytes }
            return (sessionPath, items)
        }
    }

    /// The session path and items of `packed`, or why it is not a packed batch.
    package static func unpack(_ packed: DBusBytes) throws(Malformed) -> (sessionPath: String, items: [Item]) {
        try packed.withUnsafeBytes { (bytes) throws(Malformed) in
            var reader = Reader(packed: bytes)
            let sessionPath = try reader.text()
            let count = try reader.count(eachAtLeast: 5 * 4)
            var items: [Item] = []
            items.reserveCapacity(count)
            for _ in 0..<count {
                let label = try reader.text()
                let attributes = try reader.attributes()
                let parameters = try reader.bytes()
                let value = try reader.bytes()
                items.append(Item(label: label, attributes: attributes, parameters: parameters, value: value, contentType: try reader.text()))
            }
            guard reader.offset == bytes.count else { throw .trailingBytes }
            return (sessionPath, items)
        }
    }

    /// Packs a batch: the session path first, then item after item; ``finish()`` gives the
    /// bytes. Its memory, which may hold a plain session's secrets, is wiped when it grows
    /// and when the writer goes.
    package final class Writer {
        private var storage: UnsafeMutableRawBufferPointer
        private var count = 0
        private var items: UInt32 = 0
        /// Where the item count goes, once known.
        private let countOffset: Int

        /// A batch whose secrets `sessionPath`'s session encodes, with room for about `capacity` bytes.
        package init(sessionPath: String, capacity: Int = 4096) {
            storage = .allocate(byteCount: max(capacity, 64), alignment: 8)
            countOffset = 4 + sessionPath.utf8.count
            append(sessionPath)
            append(UInt32(0))
        }

        deinit {
            explicit_bzero(storage.baseAddress!, storage.count)
            storage.deallocate()
        }

        /// Adds an item of a batch: its label, attributes and secret as its session encoded it.
        package func append(
            label: String, attributes: [String: String], parameters: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
            contentType: String
        ) {
            append(label)
            append(attributes)
            append(parameters)
            append(value)
            append(contentType)
            items += 1
        }

        /// Adds an item read.
        package func append(read item: ReadItem) {
            append(item.path)
            append((item.isLocked ? PackedItems.lockedFlag : 0) | (item.secret == nil ? 0 : PackedItems.secretFlag))
            append(time: item.created)
            append(time: item.modified)
            append(item.label)
            append(item.attributes)
            if let (parameters, value, contentType) = item.secret {
                parameters.withUnsafeBytes { append($0) }
                value.withUnsafeBytes { append($0) }
                append(contentType)
            }
            items += 1
        }

        /// The batch's bytes.
        package func finish() -> DBusBytes {
            withUnsafeBytes(of: items.littleEndian) { storage.baseAddress!.advanced(by: countOffset).copyMemory(from: $0.baseAddress!, byteCount: 4) }
            return DBusBytes(count: count) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[0..<count])) }
        }

        private func append(_ attributes: [String: String]) {
            append(UInt32(attributes.count))
            for (name, text) in attributes {
                append(name)
                append(text)
            }
        }

        private func append(time: UInt64) {
            append(UInt32(truncatingIfNeeded: time))
            append(UInt32(truncatingIfNeeded: time >> 32))
        }

        private func append(_ text: String) {
            var text = text
            text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
        }

        private func append(_ bytes: UnsafeRawBufferPointer) {
            append(UInt32(bytes.count))
            reserve(bytes.count)
            if let base = bytes.baseAddress, bytes.count > 0 { (storage.baseAddress! + count).copyMemory(from: base, byteCount: bytes.count) }
            count += bytes.count
        }

        private func append(_ number: UInt32) {
            reserve(4)
            withUnsafeBytes(of: number.littleEndian) { (storage.baseAddress! + count).copyMemory(from: $0.baseAddress!, byteCount: 4) }
            count += 4
        }

        /// Room for `more` bytes; the old memory is wiped when it moves.
        private func reserve(_ more: Int) {
            guard count + more > storage.count else { return }
            let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: max(storage.count * 2, count + more), alignment: 8)
            grown.baseAddress!.copyMemory(from: storage.baseAddress!, byteCount: count)
            explicit_bzero(storage.baseAddress!, storage.count)
            storage.deallocate()
            storage = grown
        }
    }

    /// Reads counts, texts and byte strings from the front of packed bytes.
    private struct Reader {
        let packed: UnsafeRawBufferPointer
        var offset = 0

        mutating func number() throws(Malformed) -> Int {
            guard packed.count - offset >= 4 else { throw .truncated }
            defer { offset += 4 }
            return Int(UInt32(littleEndian: packed.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        }

        /// A count of things each at least `size` bytes long: never more than the bytes left
        /// could hold, so that no count reserves memory the call did not bring.
        mutating func count(eachAtLeast size: Int) throws(Malformed) -> Int {
            let count = try number()
            guard count <= (packed.count - offset) / size else { throw .truncated }
            return count
        }

        mutating func span() throws(Malformed) -> UnsafeRawBufferPointer {
            let length = try number()
            guard length <= packed.count - offset else { throw .truncated }
            defer { offset += length }
            return UnsafeRawBufferPointer(rebasing: packed[offset..<offset + length])
        }

        mutating func text() throws(Malformed) -> String {
            let span = try span()
            guard !span.contains(0), let text = String(validating: span.assumingMemoryBound(to: UInt8.self), as: UTF8.self) else {
                throw .invalidText
            }
            return text
        }

        mutating func bytes() throws(Malformed) -> DBusBytes { DBusBytes(copying: try span()) }

        mutating func time() throws(Malformed) -> UInt64 {
            let low = UInt64(try number())
            return low | UInt64(try number()) << 32
        }

        mutating func attributes() throws(Malformed) -> [String: String] {
            var attributes: [String: String] = [:]
            let pairs = try count(eachAtLeast: 2 * 4)
            attributes.reserveCapacity(pairs)
            for _ in 0..<pairs {
                let name = try text()
                attributes[name] = try text()
            }
            return attributes
        }
    }
}
