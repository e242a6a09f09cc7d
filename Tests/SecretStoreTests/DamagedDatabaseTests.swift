import Foundation
import Testing

@testable import SecretCrypto
@testable import SecretStore

/// A database that is damaged or was written by a newer secretd is refused at start and left
/// exactly as it was: the same bytes (SHA-256), no file made over it, and a refusal that names
/// the file and what to do.
@Suite struct DamagedDatabaseTests {
    /// A data directory holding a store with a few items, closed (so the file alone holds them).
    static func storeWithItems() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("damaged-\(UUID().uuidString.prefix(12))")
        let store = try Store(directory: directory)
        let (login, keys) = try store.createCollection(
            name: "login", label: "Login", password: SecureBytes(Array("password".utf8)), parameters: .testing)
        for n in 0..<40 {
            _ = try store.createItem(
                in: login, keys: keys,
                contents: ItemContents(
                    label: "item \(n)", attributes: ["n": "\(n)"], secret: SecureBytes(Array(repeating: UInt8(n), count: 500)),
                    contentType: "text/plain"))
        }
        store.close()
        return directory
    }

    /// Each way a file is damaged, applied to the database file's bytes.
    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        case truncated, truncatedMidPage, garbagePage, wrongHeader

        var testDescription: String { rawValue }

        func apply(to bytes: inout [UInt8]) {
            switch self {
            case .truncated: bytes.removeSubrange((bytes.count / 4096 / 2 * 4096)...)
            case .truncatedMidPage: bytes.removeSubrange((bytes.count / 2 + 100)...)
            case .garbagePage:
                var random = SystemRandomNumberGenerator()
                for index in 4096..<8192 { bytes[index] = UInt8.random(in: 0...255, using: &random) }
            case .wrongHeader: bytes.replaceSubrange(0..<16, with: Array("Not a database!\0".utf8))
            }
        }
    }

    /// The names in `directory` and the SHA-256 of the database file.
    static func snapshot(_ directory: URL) throws -> (names: Set<String>, hash: [UInt8]) {
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: directory.path))
        let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(Store.fileName)))
        return (names, Gcrypt.sha256(bytes))
    }

    /// Opens the store in `directory`, which must be refused; returns the refusal.
    static func refusal(opening directory: URL) throws -> DatabaseRefusal {
        let path = directory.appendingPathComponent(Store.fileName).path
        do {
            let store = try Store(directory: directory)
            store.close()
        } catch {
            return try #require(DatabaseRefusal(error, path: path), "\(error) is not a refusal")
        }
        Issue.record("the store opened")
        throw StoreError.notFound
    }

    @Test("a damaged file is refused at start and left as it was", arguments: Damage.allCases)
    func damaged(_ damage: Damage) throws {
        let directory = try Self.storeWithItems()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent(Store.fileName)
        var bytes = [UInt8](try Data(contentsOf: file))
        damage.apply(to: &bytes)
        try Data(bytes).write(to: file)
        let before = try Self.snapshot(directory)

        let refusal = try Self.refusal(opening: directory)
        guard case .damaged = refusal.reason else { Issue.record("refused as \(refusal.reason)"); return }
        #expect(refusal.description.contains(file.path))
        #expect(refusal.description.contains("Move it aside"))
        // Refused again at the next start, and still the same file: nothing written, nothing
        // created in its place (SQLite's -shm index may come and go; the -wal stays empty).
        _ = try Self.refusal(opening: directory)
        let after = try Self.snapshot(directory)
        #expect(after.hash == before.hash, "the file changed")
        #expect(after.names.subtracting(before.names).subtracting([Store.fileName + "-shm", Store.fileName + "-wal"]).isEmpty)
        if let wal = try? Data(contentsOf: directory.appendingPathComponent(Store.fileName + "-wal")) { #expect(wal.isEmpty) }
    }

    @Test("a file from a newer schema is refused with the version it needs and left as it was")
    func newerSchema() throws {
        let directory = try Self.storeWithItems()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let database = try Database(path: directory.appendingPathComponent(Store.fileName).path)
            try database.execute("PRAGMA user_version = \(Migrations.currentVersion + 1)")
            database.close()
        }
        let before = try Self.snapshot(directory)
        let refusal = try Self.refusal(opening: directory)
        #expect(refusal.reason == .newerSchema(found: Migrations.currentVersion + 1, supported: Migrations.currentVersion))
        #expect(refusal.description.contains("schema version \(Migrations.currentVersion + 1)"))
        #expect(refusal.description.contains("newer secretd"))
        let after = try Self.snapshot(directory)
        #expect(after.hash == before.hash, "the file changed")
        #expect(after.names.subtracting(before.names).subtracting([Store.fileName + "-shm", Store.fileName + "-wal"]).isEmpty)
    }

    @Test("a newer file whose write-ahead log holds writes: the log is not folded into it, neither file changes")
    func newerSchemaWithLog() throws {
        let directory = try Self.storeWithItems()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A copy of the files while a store is open and has written the newer version and an
        // item into its -wal (as a newer secretd that was killed would leave them).
        let copy = directory.appendingPathComponent("copy")
        do {
            let store = try Store(directory: directory)
            let login = try #require(try store.collection(named: "login"))
            let keys = try store.unlock(login, password: SecureBytes(Array("password".utf8)))
            _ = try store.createItem(
                in: login, keys: keys,
                contents: ItemContents(label: "late", attributes: [:], secret: SecureBytes([1, 2, 3]), contentType: "text/plain"))
            try store.database.execute("PRAGMA user_version = \(Migrations.currentVersion + 1)")
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            for suffix in ["", "-wal"] {
                try FileManager.default.copyItem(
                    at: directory.appendingPathComponent(Store.fileName + suffix), to: copy.appendingPathComponent(Store.fileName + suffix))
            }
            store.close()
        }
        let wal = copy.appendingPathComponent(Store.fileName + "-wal")
        let walBytes = [UInt8](try Data(contentsOf: wal))
        #expect(walBytes.count > 32, "the -wal holds no writes")
        let before = try Self.snapshot(copy)
        let refusal = try Self.refusal(opening: copy)
        #expect(refusal.reason == .newerSchema(found: Migrations.currentVersion + 1, supported: Migrations.currentVersion))
        #expect(try Self.snapshot(copy).hash == before.hash, "the database file changed")
        #expect(Gcrypt.sha256([UInt8](try Data(contentsOf: wal))) == Gcrypt.sha256(walBytes), "the -wal changed")
    }
}
