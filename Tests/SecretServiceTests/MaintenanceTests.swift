import Foundation
import KeychainTestSupport
import Testing

/// The store's maintenance from the command line, against real secretd: `secretctl check` on
/// a sound store and on one whose item was damaged on disk.
@Suite struct MaintenanceTests {
    /// Runs secretctl on the fixture's bus.
    static func secretctl(_ fixture: SecretdFixture, _ arguments: [String], input: String? = nil) throws -> CommandResult {
        try fixture.run([SecretdFixture.secretctlPath] + arguments, input: input)
    }

    /// Runs the sqlite3 command-line shell on the fixture's database (secretd stopped).
    static func sqlite(_ fixture: SecretdFixture, _ sql: String) throws -> String {
        let database = fixture.dataDirectory.appendingPathComponent("secretd.sqlite3").path
        let result = try fixture.run(["/usr/bin/sqlite3", database, sql])
        #expect(result.status == 0, "\(result.errorOutput)")
        return result.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stores `count` items `service-N alice` with secret `secret-N` through secretctl.
    static func store(_ fixture: SecretdFixture, _ count: Int, prefix: String = "service") throws {
        for index in 0..<count {
            let stored = try secretctl(fixture, ["set", "\(prefix)-\(index)", "alice"], input: "secret-\(index)")
            #expect(stored.status == 0, "\(stored.errorOutput)")
        }
    }

    @Test("secretctl check: 0 on a sound store; after one item's sealed blob is damaged on disk, 6 naming the keyring and the item with what to do, in text and JSON")
    func check() throws {
        let fixture = try SecretdFixture()
        var daemon = try fixture.start()
        defer { daemon.stop() }
        try Self.store(fixture, 3)
        let good = try Self.secretctl(fixture, ["check"])
        #expect(good.status == 0, "\(good.text)\(good.errorOutput)")
        #expect(good.text.contains("database: ok"))
        #expect(good.text.contains("keyring login (\"Login\"): 3 items opened, all sound"), "\(good.text)")

        // secretd stopped, one byte of one item's sealed contents flipped on disk.
        daemon.stop()
        try fixture.waitUntilNameIsFree()
        let id = try Self.sqlite(fixture, "SELECT max(i.id) FROM items i JOIN collections c ON c.id = i.collection_id WHERE c.name = 'login'")
        _ = try Self.sqlite(fixture, MaintenanceObjectTests.flipByte.replacingOccurrences(of: "?", with: id))
        daemon = try fixture.start()

        let bad = try Self.secretctl(fixture, ["check"])
        #expect(bad.status == 6, "\(bad.text)\(bad.errorOutput)")
        #expect(bad.text.contains("database: ok"))
        #expect(bad.text.contains("keyring login (\"Login\"): 2 items opened, 1 DAMAGED"), "\(bad.text)")
        #expect(bad.text.contains("item \(id) (/org/freedesktop/secrets/collection/login/\(id)) does not open"), "\(bad.text)")
        #expect(bad.text.contains("What to do:"))
        let json = try Self.secretctl(fixture, ["check", "--json"])
        #expect(json.status == 6)
        let report = try #require(try JSONSerialization.jsonObject(with: json.output) as? [String: Any])
        #expect(report["ok"] as? Bool == false)
        let keyrings = try #require(report["keyrings"] as? [[String: Any]])
        let login = try #require(keyrings.first { $0["name"] as? String == "login" })
        let damaged = try #require(login["damaged"] as? [[String: Any]])
        #expect(damaged.map { "\($0["id"] ?? "")" } == [id])

        // Locked: not checked, and said how to unlock it; nothing found wrong is still 0.
        #expect(try Self.secretctl(fixture, ["lock"]).status == 0)
        let locked = try Self.secretctl(fixture, ["check"])
        #expect(locked.status == 0, "\(locked.text)")
        #expect(locked.text.contains("3 not checked (locked)") && locked.text.contains("secretctl unlock"), "\(locked.text)")
    }
}
