import Foundation
import Testing

@testable import SecretCrypto
@testable import SecretStore

/// `Store.restore` of a backup written by an older secretd: each schema fixture
/// (Fixtures/README.md) restored into a running store comes through whole, at today's schema.
@Suite struct RestoreFromOlderTests {
    @Test("a backup of every older schema restores into a live store: everything in it, the schema current, the backup file untouched, no temporary copy left", arguments: Array(1..<Migrations.currentVersion))
    func olderSchema(version: Int) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secretstore-restore-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store(directory: directory)
        defer { store.close() }
        _ = try store.createCollection(name: "other", label: "Other", password: SecureBytes(Array("pw".utf8)), parameters: .testing)
        let backup = try MigrationTests.copyOfFixture(version).appendingPathComponent(Store.fileName)
        defer { try? FileManager.default.removeItem(at: backup.deletingLastPathComponent().deletingLastPathComponent()) }
        let bytes = try Data(contentsOf: backup)

        let previous = directory.appendingPathComponent("before").path
        let report = try store.restore(from: backup.path, keepingCurrentAt: previous) { _ in nil }
        #expect(report.keyrings == 2)
        #expect(try store.database.userVersion == Migrations.currentVersion)
        #expect(try store.database.rows("PRAGMA journal_mode").first?.first?.text == "wal")
        try MigrationTests().expectFixtureContents(store, version: version)
        #expect(try Data(contentsOf: backup) == bytes)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!left.contains { $0.contains(".restore-") }, "\(left)")
        #expect(left.contains("before"))
    }
}
