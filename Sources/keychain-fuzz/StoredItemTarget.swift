import Foundation
import SecretCrypto
import SecretStore

/// Decoding of what secretd reads back from its database: an item's sealed contents once
/// decrypted (``ItemContents``), the key derivation parameters stored with a collection, and
/// collection and item rows.
///
/// The first byte picks what to run: 0 item contents (the rest of the input), 1 KDF
/// parameters (three big-endian 64-bit integers), 2 a collection row, 3 an item row: the
/// columns of `Store.CollectionRecord.columns` or `Store.ItemRecord.columns`, in their order,
/// each a type byte, then an integer, or a length byte and text or blob bytes.
enum StoredItemTarget {
    /// The target.
    static let target = FuzzTarget(
        name: "stored-item", summary: "item contents, KDF parameters and rows read from the database", maximumLength: 4096,
        run: run, generatedSeeds: seeds)

    /// Item contents as secretd writes them, KDF parameters, and rows.
    private static func seeds() -> [(name: String, data: Data)] {
        func contents(_ contents: ItemContents) -> Data { Data([0] + contents.encoded().withBytes { Array($0) }) }
        func integer(_ value: Int64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
        // A row's values in the order the target reads them; a column not given is NULL.
        func row<Column>(_ kind: UInt8, _ selection: Selection<Column>, _ values: [Column: Database.Value]) -> Data {
            Data([kind] + selection.columns.flatMap { column -> [UInt8] in
                switch values[column] ?? .null {
                case .null: return [0]
                case .integer(let value): return [1] + integer(value)
                case .text(let value): return [2, UInt8(value.utf8.count)] + Array(value.utf8)
                case .blob(let value): return [3, UInt8(value.count)] + value
                }
            })
        }
        return [
            ("contents-empty", contents(ItemContents(label: "", attributes: [:], secret: SecureBytes([]), contentType: ""))),
            ("contents-item", contents(ItemContents(
                label: "Mail ✓", attributes: ["service": "mail", "account": "alice", "keychain:access-group": "com.example.deploy"],
                secret: SecureBytes(Array("s3cr3t".utf8)), contentType: "text/plain"))),
            ("kdf-standard", Data([1] + integer(3) + integer(64 * 1024) + integer(4))),
            ("kdf-testing", Data([1] + integer(1) + integer(64) + integer(1))),
            ("collection-row", row(2, Store.CollectionRecord.columns, [
                .id: .integer(1), .name: .text("login"), .label: .text("Login"), .created: .integer(1_700_000_000),
                .modified: .integer(1_700_000_000), .uuid: .blob(Array(repeating: 7, count: 16)),
            ])),
            ("item-row", row(3, Store.ItemRecord.columns, [
                .id: .integer(5), .collectionID: .integer(1), .created: .integer(1_700_000_000),
                .modified: .integer(1_700_000_000), .accessGroup: .text("default"),
            ])),
            ("item-row-version-1", row(3, Store.ItemRecord.columns, [
                .id: .integer(6), .collectionID: .integer(1), .created: .integer(1_700_000_000),
                .modified: .integer(1_700_000_000),
            ])),
        ]
    }

    private static func run(_ data: Data) {
        var input = FuzzInput(data)
        switch input.byte() % 4 {
        case 0:
            checkContents(input.rest())
        case 1:
            // As Store.unlock reads a collection's kdf_iterations, kdf_memory_kib, kdf_lanes.
            let (iterations, memoryKiB, lanes) = (Int(input.integer()), Int(input.integer()), Int(input.integer()))
            if let parameters = KDFParameters(checkingIterations: iterations, memoryKiB: memoryKiB, lanes: lanes) {
                require(parameters.isWithinLimits && parameters.memoryKiB <= KDFParameters.maximumMemoryKiB,
                        "parameters beyond the limits were accepted: \(parameters)")
            }
        case 2:
            // As Store reads collections and items: a value for each column the record is read from.
            let columns = Store.CollectionRecord.columns
            _ = Store.CollectionRecord(Row(columns.columns.map { _ in value(&input) }, columns))
        default:
            let columns = Store.ItemRecord.columns
            _ = Store.ItemRecord(Row(columns.columns.map { _ in value(&input) }, columns))
        }
    }

    /// Contents that decode encode to bytes that decode to the same contents.
    private static func checkContents(_ bytes: [UInt8]) {
        guard let contents = try? ItemContents.decode(SecureBytes(bytes)) else { return }
        let encoded = contents.encoded()
        guard let again = try? ItemContents.decode(encoded) else { fatalError("re-encoded item contents do not decode") }
        require(again.label == contents.label && again.contentType == contents.contentType
                    && again.attributes == contents.attributes
                    && again.secret.withBytes({ Array($0) }) == contents.secret.withBytes({ Array($0) }),
                "item contents changed when re-encoded")
    }

    /// One column value.
    private static func value(_ input: inout FuzzInput) -> Database.Value {
        switch input.byte() % 4 {
        case 0: return .null
        case 1: return .integer(input.integer())
        case 2: return .text(String(decoding: input.shortBytes(), as: UTF8.self))
        default: return .blob(input.shortBytes())
        }
    }
}
