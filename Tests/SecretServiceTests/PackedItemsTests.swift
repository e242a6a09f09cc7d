import DBusValues
import Testing

/// ``PackedItems``: the byte layout of `Import1.ImportPackedItems`, packed by the library and
/// unpacked by secretd.
@Suite struct PackedItemsTests {
    typealias Item = (label: String, attributes: [String: String], parameters: [UInt8], value: [UInt8], contentType: String)

    static let items: [Item] = [
        ("plain", ["service": "s", "account": "a"], [], Array("secret".utf8), "text/plain"),
        ("", [:], Array(repeating: 7, count: 16), [0, 255, 0, 1], "application/octet-stream"),
        ("Ünïcødé ✓ label", ["名前": "値", "empty": ""], [], [], ""),
    ]

    static func pack(_ items: [Item], session: String = "/org/freedesktop/secrets/session/s1", capacity: Int = 4096) -> DBusBytes {
        let writer = PackedItems.Writer(sessionPath: session, capacity: capacity)
        for item in items {
            item.parameters.withUnsafeBytes { parameters in
                item.value.withUnsafeBytes { value in
                    writer.append(label: item.label, attributes: item.attributes, parameters: parameters, value: value, contentType: item.contentType)
                }
            }
        }
        return writer.finish()
    }

    @Test("what is packed unpacks to the same session and items, however small the writer started; an empty batch too")
    func roundTrip() throws {
        for capacity in [0, 16, 4096] {
            let many = (0..<200).flatMap { _ in Self.items }
            let (session, unpacked) = try PackedItems.unpack(Self.pack(many, capacity: capacity))
            #expect(session == "/org/freedesktop/secrets/session/s1")
            #expect(unpacked.count == many.count)
            for (item, original) in zip(unpacked, many) {
                #expect(item.label == original.label && item.attributes == original.attributes && item.contentType == original.contentType)
                #expect(item.parameters.array == original.parameters && item.value.array == original.value)
            }
        }
        let (session, none) = try PackedItems.unpack(Self.pack([], session: "/"))
        #expect(session == "/" && none.isEmpty)
    }

    @Test("every cut-short batch is refused as truncated, a byte more as trailing, never read past its end")
    func truncatedAndTrailing() throws {
        let whole = Self.pack(Self.items).array
        for length in 0..<whole.count {
            #expect(throws: PackedItems.Malformed.truncated) { try PackedItems.unpack(DBusBytes(Array(whole.prefix(length)))) }
        }
        #expect(throws: PackedItems.Malformed.trailingBytes) { try PackedItems.unpack(DBusBytes(whole + [0])) }
    }

    @Test("a count or length larger than the bytes could hold is refused before anything is reserved for it")
    func hugeCounts() throws {
        func little(_ number: UInt32) -> [UInt8] { withUnsafeBytes(of: number.littleEndian) { Array($0) } }
        let session = little(1) + Array("/".utf8)
        #expect(throws: PackedItems.Malformed.truncated) { try PackedItems.unpack(DBusBytes(session + little(.max))) }
        #expect(throws: PackedItems.Malformed.truncated) { try PackedItems.unpack(DBusBytes(session + little(1) + little(.max))) }
        // One item whose attribute count is larger than its bytes could hold.
        let item = little(0) + little(0x1000_0000) + little(0) + little(0) + little(0)
        #expect(throws: PackedItems.Malformed.truncated) { try PackedItems.unpack(DBusBytes(session + little(1) + item)) }
    }

    @Test("a text that is not UTF-8 or holds a NUL is refused")
    func invalidText() throws {
        func little(_ number: UInt32) -> [UInt8] { withUnsafeBytes(of: number.littleEndian) { Array($0) } }
        func batch(label: [UInt8]) -> [UInt8] {
            little(1) + Array("/".utf8) + little(1) + little(UInt32(label.count)) + label + little(0) + little(0) + little(0) + little(0)
        }
        #expect(try PackedItems.unpack(DBusBytes(batch(label: Array("fine".utf8)))).items.first?.label == "fine")
        #expect(throws: PackedItems.Malformed.invalidText) { try PackedItems.unpack(DBusBytes(batch(label: [0x66, 0xff, 0x66]))) }
        #expect(throws: PackedItems.Malformed.invalidText) { try PackedItems.unpack(DBusBytes(batch(label: [0x66, 0, 0x66]))) }
        #expect(throws: PackedItems.Malformed.invalidText) { try PackedItems.unpack(DBusBytes(batch(label: [0xed, 0xa0, 0x80]))) }
    }

    static let read: [PackedItems.ReadItem] = [
        .init(path: "/org/freedesktop/secrets/collection/login/1", isLocked: false, created: 1_700_000_000, modified: UInt64(UInt32.max) + 5,
              label: "Ünïcødé", attributes: ["service": "s", "account": "a"],
              secret: (DBusBytes(Array(repeating: 3, count: 16)), DBusBytes([1, 2, 3]), "text/plain")),
        .init(path: "/org/freedesktop/secrets/collection/login/2", isLocked: true, created: 1, modified: 2, label: "", attributes: [:], secret: nil),
        .init(path: "/org/freedesktop/secrets/collection/login/3", isLocked: false, created: 0, modified: .max, label: "no secret asked",
              attributes: ["x": ""], secret: nil),
    ]

    static func packRead(_ items: [PackedItems.ReadItem], capacity: Int = 4096) -> DBusBytes {
        let writer = PackedItems.Writer(sessionPath: "/org/freedesktop/secrets/session/s2", capacity: capacity)
        for item in items { writer.append(read: item) }
        return writer.finish()
    }

    @Test("items read unpack to the same paths, flags, times, labels, attributes and secrets; every cut is refused as truncated, a byte more as trailing")
    func readRoundTrip() throws {
        for capacity in [0, 4096] {
            let (session, items) = try PackedItems.unpackRead(Self.packRead(Self.read, capacity: capacity))
            #expect(session == "/org/freedesktop/secrets/session/s2" && items.count == Self.read.count)
            for (item, original) in zip(items, Self.read) {
                #expect(item.path == original.path && item.isLocked == original.isLocked && item.created == original.created)
                #expect(item.modified == original.modified && item.label == original.label && item.attributes == original.attributes)
                #expect(item.secret?.parameters == original.secret?.parameters && item.secret?.value == original.secret?.value)
                #expect(item.secret?.contentType == original.secret?.contentType)
            }
        }
        let whole = Self.packRead(Self.read).array
        for length in 0..<whole.count {
            #expect(throws: PackedItems.Malformed.truncated) { try PackedItems.unpackRead(DBusBytes(Array(whole.prefix(length)))) }
        }
        #expect(throws: PackedItems.Malformed.trailingBytes) { try PackedItems.unpackRead(DBusBytes(whole + [0])) }
    }
}

