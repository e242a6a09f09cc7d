import DBusValues
import Foundation

/// secretd's `Import1.ImportPackedItems` argument and `ReadPackedItems` reply
/// (``PackedItems``): bytes any client sends, unpacked on secretd's main loop, and bytes the
/// library unpacks from whatever owns the bus name. Each input is tried as both.
enum PackedItemsTarget {
    /// The target.
    static let target = FuzzTarget(
        name: "packed-items", summary: "ImportPackedItems batches and ReadPackedItems replies", maximumLength: 4096, run: run, generatedSeeds: seeds)

    /// A batch of two items, one with attributes and a plain secret, one binary with
    /// parameters; and an empty batch.
    private static func seeds() -> [(name: String, data: Data)] {
        [
            ("two-items", Data(pack("/org/freedesktop/secrets/session/s1", [
                ("label", ["service": "s", "account": "a"], [], Array("secret".utf8), "text/plain"),
                ("", [:], Array(repeating: 7, count: 16), [0, 255, 0, 1], "application/octet-stream"),
            ]).array)),
            ("empty", Data(pack("/", []).array)),
            ("read", Data(packRead("/org/freedesktop/secrets/session/s1", [
                .init(path: "/org/freedesktop/secrets/collection/login/1", isLocked: false, created: 1, modified: 1 << 33, label: "l",
                      attributes: ["a": "b"], secret: (DBusBytes([1, 2]), DBusBytes([3]), "text/plain")),
                .init(path: "/org/freedesktop/secrets/collection/login/2", isLocked: true, created: 0, modified: 0, label: "",
                      attributes: [:], secret: nil),
            ]).array)),
        ]
    }

    private static func packRead(_ session: String, _ items: [PackedItems.ReadItem]) -> DBusBytes {
        let writer = PackedItems.Writer(sessionPath: session, capacity: 16)
        for item in items { writer.append(read: item) }
        return writer.finish()
    }

    private typealias Item = (label: String, attributes: [String: String], parameters: [UInt8], value: [UInt8], contentType: String)

    private static func pack(_ session: String, _ items: [Item]) -> DBusBytes {
        let writer = PackedItems.Writer(sessionPath: session, capacity: 16)
        for item in items {
            item.parameters.withUnsafeBytes { parameters in
                item.value.withUnsafeBytes { value in
                    writer.append(label: item.label, attributes: item.attributes, parameters: parameters, value: value, contentType: item.contentType)
                }
            }
        }
        return writer.finish()
    }

    private static func run(_ data: Data) {
        runBatch(data)
        runRead(data)
    }

    private static func runRead(_ data: Data) {
        guard let (session, items) = try? PackedItems.unpackRead(DBusBytes([UInt8](data))) else { return }
        // What unpacks packs again to bytes that unpack to the same items.
        let repacked = packRead(session, items)
        require(repacked.count <= data.count, "packed again, \(data.count) bytes grew to \(repacked.count)")
        guard let (sameSession, same) = try? PackedItems.unpackRead(repacked) else { return require(false, "items read packed again do not unpack") }
        require(sameSession == session && same.count == items.count, "packed again, the session or the count changed")
        for (item, original) in zip(same, items) {
            require(
                item.path == original.path && item.isLocked == original.isLocked && item.created == original.created
                    && item.modified == original.modified && item.label == original.label && item.attributes == original.attributes
                    && item.secret?.parameters == original.secret?.parameters && item.secret?.value == original.secret?.value
                    && item.secret?.contentType == original.secret?.contentType,
                "packed again, an item read changed")
        }
    }

    private static func runBatch(_ data: Data) {
        guard let (session, items) = try? PackedItems.unpack(DBusBytes([UInt8](data))) else { return }
        // What unpacks packs again to bytes that unpack to the same batch.
        let again = items.map { ($0.label, $0.attributes, $0.parameters.array, $0.value.array, $0.contentType) }
        let repacked = pack(session, again)
        require(repacked.count <= data.count, "packed again, \(data.count) bytes grew to \(repacked.count)")
        guard let (sameSession, same) = try? PackedItems.unpack(repacked) else { return require(false, "a batch packed again does not unpack") }
        require(sameSession == session && same.count == items.count, "packed again, the session or the count changed")
        for (item, original) in zip(same, items) {
            require(
                item.label == original.label && item.attributes == original.attributes && item.parameters == original.parameters
                    && item.value == original.value && item.contentType == original.contentType,
                "packed again, an item changed")
        }
    }
}
