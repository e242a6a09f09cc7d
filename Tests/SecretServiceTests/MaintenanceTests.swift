import Foundation
import KeychainCore
import KeychainTestSupport
import Testing

/// The store's maintenance from the command line, against real secretd: `secretctl check` on
/// a sound store and on one whose item was damaged on disk.
@Suite struct MaintenanceTests {
    /// Runs secretctl on the fixture's bus.
    static func secretctl(_ fixture: SecretdFixture, _ arguments: [String], input: String? = nil) throws -> CommandResult {
        try fixture.run([SecretdFixture.secretctlPath] + arguments, input: input)
    }

    /// Runs the sqlite3 command-line shell on the fixture's database (secretd stopped), or on
    /// the database at `path`.
    static func sqlite(_ fixture: SecretdFixture, _ sql: String, at path: String? = nil) throws -> String {
        let database = path ?? fixture.dataDirectory.appendingPathComponent("secretd.sqlite3").path
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

extension MaintenanceTests {
    /// Which of a writer's items were acknowledged, shared between the writer and the test.
    final class Progress: @unchecked Sendable {
        private let lock = NSLock()
        private var stored = 0
        /// How many items the writer has had acknowledged.
        var count: Int { lock.withLock { stored } }
        /// One more acknowledged.
        func add() { lock.withLock { stored += 1 } }
    }

    /// What the calls of clients that failed said, shared between them and the test.
    final class Failures: @unchecked Sendable {
        private let lock = NSLock()
        private var messages: [String] = []
        /// Every failure so far.
        var all: [String] { lock.withLock { messages } }
        /// One more.
        func add(_ message: String) { lock.withLock { messages.append(message) } }
    }

    @Test("secretctl backup while a writer stores items: every item acknowledged before it is in the copy with its secret, the copy opens in another secretd item by item; FILE is 0600 and is not replaced without --force")
    func backupWhileWriting() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        try Self.store(fixture, 3)
        let writes = 40
        let progress = Progress()
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            for index in 0..<writes {
                guard let stored = try? Self.secretctl(fixture, ["set", "writer-\(index)", "alice"], input: "secret-\(index)"),
                    stored.status == 0
                else { break }
                progress.add()
            }
            finished.signal()
        }
        while progress.count < 5 { usleep(10_000) }
        let acknowledged = progress.count
        let file = fixture.root.appendingPathComponent("backup.sqlite3").path
        let backup = try Self.secretctl(fixture, ["backup", "--json", file])
        finished.wait()
        #expect(backup.status == 0, "\(backup.errorOutput)")
        let report = try #require(try JSONSerialization.jsonObject(with: backup.output) as? [String: Any])
        let verified = try #require(report["items_verified"] as? Int)
        #expect(verified >= 3 + acknowledged, "\(backup.text)")
        #expect(progress.count == writes)
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // Not replaced without --force; replaced with it.
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        let refused = try Self.secretctl(fixture, ["backup", file])
        #expect(refused.status == 6 && refused.errorOutput.contains("--force"), "\(refused.errorOutput)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
        #expect(try Self.secretctl(fixture, ["backup", "--force", file]).status == 0)

        // The first copy, opened by another secretd, item by item.
        let restored = try SecretdFixture()
        try FileManager.default.createDirectory(at: restored.dataDirectory, withIntermediateDirectories: true)
        try before.write(to: restored.dataDirectory.appendingPathComponent("secretd.sqlite3"))
        let second = try restored.start()
        defer { second.stop() }
        let listed = try Self.secretctl(restored, ["list", "--json"])
        let items = try #require(try JSONSerialization.jsonObject(with: listed.output) as? [[String: Any]])
        let services = Set(items.compactMap { $0["service"] as? String })
        #expect(services.count == verified, "\(services.sorted())")
        for index in 0..<3 { #expect(services.contains("service-\(index)")) }
        for index in 0..<acknowledged { #expect(services.contains("writer-\(index)"), "writer-\(index) acknowledged before the backup") }
        for service in services {
            let secret = try Self.secretctl(restored, ["get", service, "alice"])
            #expect(secret.text == "secret-" + (service.split(separator: "-").last.map(String.init) ?? ""), "\(service)")
        }
        #expect(try Self.secretctl(restored, ["check"]).status == 0)

        // backup --verify: the copy verifies; a tampered or truncated one does not.
        let verified2 = try Self.secretctl(fixture, ["backup", "--verify", file])
        #expect(verified2.status == 0 && verified2.text.contains("verifies"), "\(verified2.text)\(verified2.errorOutput)")
        let tampered = fixture.root.appendingPathComponent("tampered.sqlite3")
        try FileManager.default.copyItem(at: URL(fileURLWithPath: file), to: tampered)
        let id = try Self.sqlite(fixture, "SELECT max(id) FROM items", at: tampered.path)
        _ = try Self.sqlite(fixture, MaintenanceObjectTests.flipByte.replacingOccurrences(of: "?", with: id), at: tampered.path)
        let badSeal = try Self.secretctl(fixture, ["backup", "--verify", tampered.path])
        #expect(badSeal.status == 6 && badSeal.errorOutput.contains("item \(id) of keyring login does not open"), "\(badSeal.errorOutput)")
        let truncated = fixture.root.appendingPathComponent("truncated.sqlite3")
        let whole = try Data(contentsOf: URL(fileURLWithPath: file))
        try whole.prefix(whole.count / 2).write(to: truncated)
        let short = try Self.secretctl(fixture, ["backup", "--verify", truncated.path])
        #expect(short.status == 6 && short.errorOutput.contains("does not verify"), "\(short.errorOutput)")
    }
}

extension MaintenanceTests {
    @Test("secretctl restore while other clients call: none of their calls fails; the old secrets are back after unlock, the replaced data kept 0600; refused backups change nothing")
    func restoreWhileCalling() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        try Self.store(fixture, 4)
        let file = fixture.root.appendingPathComponent("backup.sqlite3").path
        #expect(try Self.secretctl(fixture, ["backup", file]).status == 0)
        // After the backup: one secret changed, one item deleted, one added.
        #expect(try Self.secretctl(fixture, ["set", "service-0", "alice"], input: "changed").status == 0)
        #expect(try Self.secretctl(fixture, ["delete", "service-1", "alice"]).status == 0)
        try Self.store(fixture, 1, prefix: "new")

        // Refused: nothing changes, no copy is kept.
        let missing = try Self.secretctl(fixture, ["restore", fixture.root.appendingPathComponent("missing.sqlite3").path])
        #expect(missing.status == 6 && missing.errorOutput.contains("No such file"), "\(missing.errorOutput)")
        let live = try Self.secretctl(fixture, ["restore", fixture.dataDirectory.appendingPathComponent("secretd.sqlite3").path])
        #expect(live.status == 6 && live.errorOutput.contains("live database itself"), "\(live.errorOutput)")
        let truncated = fixture.root.appendingPathComponent("truncated.sqlite3")
        let whole = try Data(contentsOf: URL(fileURLWithPath: file))
        try whole.prefix(whole.count / 3).write(to: truncated)
        let short = try Self.secretctl(fixture, ["restore", truncated.path])
        #expect(short.status == 6, "\(short.errorOutput)")
        #expect(try Self.secretctl(fixture, ["get", "service-0", "alice"]).text == "changed")
        let copies = { try FileManager.default.contentsOfDirectory(atPath: fixture.dataDirectory.path).filter { $0.contains("before-restore") } }
        #expect(try copies().isEmpty)

        // Other clients search without pause while the restore runs, one call each (a client that
        // makes several could see an item the restore removes between two of them, as it could
        // see one another client deletes): each call is answered, none fails.
        let stop = Progress()
        let calls = Progress()
        let failures = Failures()
        let finished = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            DispatchQueue.global().async {
                while stop.count == 0 {
                    do {
                        let search = try fixture.run([
                            "/usr/bin/busctl", "--address=\(fixture.bus.address)", "call", "org.freedesktop.secrets",
                            "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems", "a{ss}", "1", "service",
                            "service-2",
                        ])
                        if search.status == 0 && search.text.contains("/org/freedesktop/secrets/collection/login/") {
                            calls.add()
                        } else {
                            failures.add("exit \(search.status): \(search.text) \(search.errorOutput)")
                        }
                    } catch {
                        failures.add("\(error)")
                    }
                }
                finished.signal()
            }
        }
        for _ in 0..<1_000 where calls.count < 2 { usleep(10_000) }
        let before = calls.count
        let restored = try Self.secretctl(fixture, ["restore", "--json", file])
        for _ in 0..<1_000 where calls.count < before + 4 { usleep(10_000) }
        stop.add()
        finished.wait()
        finished.wait()
        #expect(calls.count >= before + 4, "\(calls.count - before) calls answered during and after the restore")
        #expect(failures.all.isEmpty, "calls failed while secretd restored: \(failures.all.prefix(3))")
        #expect(restored.status == 0, "\(restored.errorOutput)")
        let report = try #require(try JSONSerialization.jsonObject(with: restored.output) as? [String: Any])
        #expect(report["items_verified"] as? Int == 4, "\(restored.text)")
        let previous = try #require(report["previous"] as? String)
        #expect(try FileManager.default.attributesOfItem(atPath: previous)[.posixPermissions] as? Int == 0o600)
        #expect(try copies().count == 1)

        // Locked now; unlocked, the backup's items with their secrets.
        let locked = try Self.secretctl(fixture, ["get", "service-0", "alice"])
        #expect(locked.status == 3, "\(locked.text)\(locked.errorOutput)")
        let unlocked = try Self.secretctl(fixture, ["unlock", "--password-stdin"], input: "login-password\n")
        #expect(unlocked.status == 0, "\(unlocked.errorOutput)")
        for index in 0..<4 {
            #expect(try Self.secretctl(fixture, ["get", "service-\(index)", "alice"]).text == "secret-\(index)", "service-\(index)")
        }
        #expect(try Self.secretctl(fixture, ["get", "new-0", "alice"]).status == 1)
        #expect(try Self.secretctl(fixture, ["check"]).status == 0)
    }

    @Test("automatic backups: secretd's timer takes one at start when none exists and another each interval on its clock, keeping backup-keep; secretctl check names the last")
    func automaticBackups() throws {
        let fixture = try SecretdFixture()
        try fixture.writeConfiguration("backup-interval = 1h\nbackup-keep = 2\n")
        fixture.environment[TestHooks.backupCheckInterval] = "0.2"
        let daemon = try fixture.start()
        defer { daemon.stop() }
        try Self.store(fixture, 2)
        let directory = fixture.dataDirectory.appendingPathComponent("backups")
        func backups() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix("secretd-") }.sorted()
        }
        func waitFor(_ count: Int) {
            for _ in 0..<500 where backups().count < count { usleep(20_000) }
        }
        waitFor(1)
        #expect(backups().count == 1)
        #expect(try FileManager.default.attributesOfItem(atPath: directory.path)[.posixPermissions] as? Int == 0o700)
        usleep(600_000)  // three checks: not due yet
        #expect(backups().count == 1)
        var seen = Set(backups())
        for round in 0..<2 {
            try fixture.passwordClock.advance(by: 3_600)
            for _ in 0..<500 where Set(backups()) == seen { usleep(20_000) }
            #expect(Set(backups()) != seen, "round \(round)")
            seen = Set(backups())
        }
        #expect(backups().count == 2, "\(backups())")
        let check = try Self.secretctl(fixture, ["check"])
        #expect(check.text.contains("automatic backups: every 3600 s, 2 kept in \(directory.path); last \(directory.path)/\(backups().last ?? "?")"),
                "\(check.text)")
        let json = try Self.secretctl(fixture, ["check", "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: json.output) as? [String: Any])
        let automatic = try #require(report["automatic_backups"] as? [String: Any])
        #expect(automatic["keep"] as? Int == 2 && automatic["interval"] as? Int == 3_600)
    }
}
