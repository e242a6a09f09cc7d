import Foundation
import KeychainTestSupport
@testable import SecretCrypto
@testable import SecretStore
import Testing

/// secretd started on a damaged database, or on one a newer secretd wrote: the file is left
/// exactly as it was (SHA-256), nothing is created over it, the journal says what is wrong,
/// and every client gets `io.github.secretd.Error.UnusableDatabase` at once, naming the file
/// and what to do, never an empty keyring. Once the file is moved aside secretd exits by
/// itself, and the next start makes a new keyring.
@Suite(.serialized) struct RefusedDatabaseTests {
    /// How a file is made unusable.
    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        case truncated, garbagePage, wrongHeader, newerUserVersion

        var testDescription: String { rawValue }
    }

    /// Fills the fixture's data directory with a store holding an item, then damages it.
    static func damagedStore(_ fixture: SecretdFixture, _ damage: Damage) throws -> URL {
        let store = try Store(directory: fixture.dataDirectory)
        let (login, keys) = try store.createCollection(
            name: "login", label: "Login", password: SecureBytes(Array("login-password".utf8)), parameters: .testing)
        for n in 0..<30 {
            _ = try store.createItem(
                in: login, keys: keys,
                contents: ItemContents(label: "item \(n)", attributes: ["n": "\(n)"], secret: SecureBytes(Array(repeating: 7, count: 400)),
                                       contentType: "text/plain"))
        }
        store.close()
        let file = fixture.dataDirectory.appendingPathComponent(Store.fileName)
        var bytes = [UInt8](try Data(contentsOf: file))
        switch damage {
        case .truncated: bytes.removeSubrange((bytes.count / 2 + 100)...)
        case .garbagePage:
            var random = SystemRandomNumberGenerator()
            for index in 4096..<8192 { bytes[index] = UInt8.random(in: 0...255, using: &random) }
        case .wrongHeader: bytes.replaceSubrange(0..<16, with: Array("Not a database!\0".utf8))
        case .newerUserVersion:
            // The schema version is the header's big-endian word at offset 60.
            let version = UInt32(Migrations.currentVersion + 1)
            bytes.replaceSubrange(60..<64, with: [UInt8(version >> 24), UInt8(version >> 16 & 0xff), UInt8(version >> 8 & 0xff), UInt8(version & 0xff)])
        }
        try Data(bytes).write(to: file)
        return file
    }

    /// The names in the data directory other than the lock, SQLite's index and an empty -wal.
    static func names(_ fixture: SecretdFixture) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: fixture.dataDirectory.path))
            .subtracting(["secretd.lock", Store.fileName + "-shm", Store.fileName + "-wal"])
    }

    @Test("at start, a damaged or newer database is refused to every client at once and left as it was", arguments: Damage.allCases)
    func refused(_ damage: Damage) throws {
        let fixture = try SecretdFixture()
        let file = try Self.damagedStore(fixture, damage)
        let hash = Gcrypt.sha256([UInt8](try Data(contentsOf: file)))
        let namesBefore = try Self.names(fixture)

        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(daemon.logs("<3>secretd: the keyring database \(file.path)"))
        let expected = damage == .newerUserVersion ? "written by a newer secretd (schema version \(Migrations.currentVersion + 1)" : "is damaged"
        #expect(daemon.log.contains(expected), "\(daemon.log)")

        // A raw call and libsecret's secret-tool: the typed error at once, never an empty keyring.
        let started = Date()
        do {
            _ = try fixture.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "OpenSession", "('plain', <''>)")
            Issue.record("OpenSession succeeded")
        } catch let error as BusError {
            #expect(error.name == "io.github.secretd.Error.UnusableDatabase", "\(error)")
            #expect(error.description.contains(file.path) && error.description.contains(expected), "\(error)")
        }
        do {
            _ = try fixture.call("/org/freedesktop/secrets/collection/login", "org.freedesktop.DBus.Properties", "Get",
                                 "('org.freedesktop.Secret.Collection', 'Items')")
            Issue.record("Get succeeded")
        } catch let error as BusError {
            #expect(error.name == "io.github.secretd.Error.UnusableDatabase", "\(error)")
        }
        let stored = try fixture.run(["secret-tool", "store", "--label=x", "a", "b"], input: "new secret")
        #expect(stored.status != 0)
        #expect(stored.errorOutput.contains(file.path), "\(stored.errorOutput)")
        let lookup = try fixture.run(["secret-tool", "lookup", "n", "1"])
        #expect(lookup.status != 0 && lookup.text.isEmpty)
        let listed = try fixture.run([SecretdFixture.secretctlPath, "list"])
        #expect(listed.status != 0 && listed.text.isEmpty)
        #expect(listed.errorOutput.hasPrefix("secretctl: the keyring database \(file.path)"), "\(listed.errorOutput)")
        #expect(Date().timeIntervalSince(started) < 10, "the refusals took \(Date().timeIntervalSince(started)) s")

        // Stopped and started again: still refused; the file never changed, nothing was made over it.
        daemon.stop()
        try fixture.waitUntilNameIsFree()
        let again = try fixture.start()
        defer { again.stop() }
        #expect(again.logs("<3>secretd: the keyring database \(file.path)"))
        again.stop()
        try fixture.waitUntilNameIsFree()
        #expect(Gcrypt.sha256([UInt8](try Data(contentsOf: file))) == hash, "the database file changed")
        #expect(try Self.names(fixture) == namesBefore)
        let wal = fixture.dataDirectory.appendingPathComponent(Store.fileName + "-wal")
        if let log = try? Data(contentsOf: wal) { #expect(log.isEmpty, "a -wal with writes in it") }
    }

    @Test("once the refused file is moved aside, secretd exits by itself and the next start makes a new keyring")
    func movedAside() throws {
        let fixture = try SecretdFixture()
        let file = try Self.damagedStore(fixture, .wrongHeader)
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let aside = file.appendingPathExtension("damaged")
        try FileManager.default.moveItem(at: file, to: aside)
        #expect(daemon.waitForExit(timeout: 10) == 0, "\(daemon.log)")
        #expect(daemon.log.contains("was moved or replaced; exiting"))
        let fresh = try fixture.start()
        defer { fresh.stop() }
        let stored = try fixture.run(["secret-tool", "store", "--label=x", "a", "b"], input: "new secret")
        #expect(stored.status == 0, "\(stored.errorOutput)")
        #expect(try fixture.run(["secret-tool", "lookup", "a", "b"]).text == "new secret")
        #expect(FileManager.default.fileExists(atPath: aside.path))
    }
}
