import Foundation
import KeychainTestSupport
@testable import SecretStore
import Testing

/// The D-Bus fuzzer (`fuzz/dbus-fuzz.py`) against a real secretd, and one test for each bug it
/// found. `make test` runs it for 30 s, `make fuzz-dbus` for 5 minutes (`DBUS_FUZZ_SECONDS`).
@Suite struct DBusFuzzTests: SecretServiceCalls {

    /// The fuzzer, found from this file's place in the repository.
    static var fuzzer: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("fuzz/dbus-fuzz.py").path
    }

    /// What a daemon log must never hold: a crash, a GLib critical, a failed assertion.
    static let crashMarks = [
        "Program crashed", "Fatal error", "CRITICAL", "Bail out", "GLib:ERROR", "runtime check failed", "storage error",
        "The payload is as follows",  // GDBus's hex dump of a message it cannot decode: secrets and all
    ]

    @Test("random calls with random arguments on every path for DBUS_FUZZ_SECONDS (30): every call answered, no crash, untouched items unchanged")
    func fuzz() throws {
        let seconds = Int(ProcessInfo.processInfo.environment["DBUS_FUZZ_SECONDS"] ?? "") ?? 30
        let seed = ProcessInfo.processInfo.environment["DBUS_FUZZ_SEED"].map { ["--seed", $0] } ?? []
        let fixture = try SecretdFixture()  // no pinentry: every prompt completes as dismissed at once
        let daemon = try fixture.start()
        let ownerAtStart = try Self.owner(fixture)
        let report = fixture.root.appendingPathComponent("fuzz-report.json")
        let fuzzer = try SupervisedProcess(
            ["/usr/bin/python3", Self.fuzzer, "--seconds", String(seconds), "--password", "login-password",
             "--report", report.path, "--mutation-log", fixture.root.appendingPathComponent("mutations.jsonl").path] + seed,
            environment: fixture.environment, logURL: fixture.root.appendingPathComponent("fuzz.log"))
        let status = fuzzer.waitForExit(timeout: TimeInterval(seconds + 300))
        if status == nil { fuzzer.stop() }
        let text = (try? String(contentsOf: report, encoding: .utf8)) ?? ""
        // try?: an unreadable report fails here with the fuzzer's log, not with a bare JSON error.
        let results = try #require((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
                                   "no report (status \(String(describing: status))): \(fuzzer.log)")
        let log = daemon.log
        print("dbus-fuzz: \(results["calls"] ?? 0) calls in \(results["seconds"] ?? 0) s (seed \(results["seed"] ?? 0)), "
              + "outcomes \(results["outcomes"] ?? [:]), \(results["successful_mutations"] ?? 0) successful mutations, "
              + "verification \(results["verification"] ?? [:])")
        #expect(status == 0, "the fuzzer failed: \(fuzzer.log)")
        #expect(results["timeouts"] as? [String] == [], "calls unanswered: \(results["timeouts"] ?? "")")
        #expect(results["daemon_alive"] as? Bool == true, "in flight when it died: \(results["calls_in_flight_when_the_daemon_died"] ?? "")")
        let verification = results["verification"] as? [String: Any] ?? [:]
        #expect(verification["problems"] as? [String] == [], "\(verification)")
        #expect((verification["checked"] as? Int ?? 0) >= 20, "too few seed items left to check: \(verification)")
        #expect((results["calls"] as? Int ?? 0) >= 100 * seconds, "the fuzzer made few calls: \(results["calls"] ?? 0)")
        #expect(daemon.isRunning)
        // Never off the bus, not even for a moment: the same connection owns the name throughout.
        #expect(try Self.owner(fixture) == ownerAtStart, "secretd's connection changed: \(log.suffix(4000))")
        #expect(!log.contains("the session bus is gone"))
        for mark in Self.crashMarks { #expect(!log.contains(mark), "secretd logged \(mark): \(log.suffix(4000))") }
        daemon.stop()
        // What is on disk is consistent.
        let database = try Database(path: fixture.dataDirectory.appendingPathComponent(Store.fileName).path)
        #expect(try database.rows("PRAGMA integrity_check").first?.first?.text == "ok")
    }

    // MARK: - Bugs the fuzzer found

    func raw(_ fixture: SecretdFixture, _ path: String, _ interface: String, _ method: String, _ signature: String,
             _ body: String) throws -> String {
        try fixture.runClient("raw-call.py", [path, interface, method, signature, body]).text
    }

    @Test("values of every D-Bus type inside variants are taken or refused, never a crash (a double used to abort secretd)")
    func everyValueType() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let session = try openPlainSession(fixture)
        #expect(try fixture.call(Self.service, Self.serviceInterface, "OpenSession", "('plain', <1.5>)")
            .contains("/org/freedesktop/secrets/session/"))
        let created = try fixture.call(
            Self.login, Self.collectionInterface, "CreateItem",
            "({'org.freedesktop.Secret.Item.Label': <'typed'>, 'org.freedesktop.Secret.Item.Attributes': <{'typed': 'yes'}>, "
                + "'d': <1.5>, 'y': <byte 7>, 'n': <int16 -2>, 'q': <uint16 3>, 'g': <signature 'a{sv}'>, "
                + "'nested': <[<(1.5, byte 1)>]>}, \(secret(session, "typed")), false)")
        #expect(created.contains("/org/freedesktop/secrets/collection/login/"), "\(created)")
        // A file descriptor index with no descriptor sent along cannot be read: refused.
        #expect(refusal {
            try fixture.call(
                Self.login, Self.collectionInterface, "CreateItem",
                "({'org.freedesktop.Secret.Item.Label': <'fd'>, 'h': <handle 0>}, \(secret(session, "fd")), false)")
        } == "org.freedesktop.DBus.Error.InvalidArgs")
        // A label of the wrong type is refused (BadInputTests has the rest of that matrix).
        #expect(refusal {
            try fixture.call(
                Self.login, Self.collectionInterface, "CreateItem",
                "({'org.freedesktop.Secret.Item.Label': <2.5>}, \(secret(session, "x")), false)")
        } == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(daemon.isRunning)
        for mark in Self.crashMarks { #expect(!daemon.log.contains(mark)) }
    }

    /// The unique name of the connection that owns `org.freedesktop.secrets`.
    static func owner(_ fixture: SecretdFixture) throws -> String {
        try fixture.control.call(
            "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", "('\(TestEnvironment.busName)',)",
            destination: "org.freedesktop.DBus")
    }

    @Test("a message GDBus misread (GLib 2.74) and dropped its connection over is refused: same connection, state kept")
    func undecodableMessage() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let ownerBefore = try Self.owner(fixture)
        let session = try openPlainSession(fixture)
        let item = try createItem(fixture, session, attributes: "{'kept': 'yes'}", value: "kept")
        // An array of dict entries whose last entry starts in the array's final 4 bytes: GDBus
        // stopped reading the array early, failed on what followed and closed the connection.
        for method in ["Nothing", "CreateItem", "SearchItems"] {
            let answer = try raw(fixture, Self.service, Self.serviceInterface, method, "a{gy}a{qy}", "({'ytai': 66, '': 212}, {})")
            #expect(answer.hasPrefix("error") && (answer.contains("no method") || answer.contains("takes arguments")), "\(answer)")
        }
        let onItem = try raw(fixture, item, Self.itemInterface, "SetSecret", "a{gy}a{qy}", "({'ytai': 66, '': 212}, {})")
        #expect(onItem.hasPrefix("error") && onItem.contains("SetSecret takes arguments of type ((oayays))"), "\(onItem)")
        #expect(try Self.owner(fixture) == ownerBefore)
        #expect(daemon.isRunning)
        #expect(!daemon.log.contains("the session bus is gone"))
        for mark in Self.crashMarks { #expect(!daemon.log.contains(mark), "\(daemon.log)") }
        // The keyring is still unlocked and the session opened before still works.
        let reply = try fixture.call(item, Self.itemInterface, "GetSecret", "(objectpath '\(session)',)")
        #expect(reply.contains("[byte 0x6b, 0x65, 0x70, 0x74]"), "\(reply)")
        #expect(try fixture.run(["secret-tool", "search", "kept", "yes"]).status == 0)
    }

    @Test("a failed property read or write carries secretd's error name, not org.gtk.GDBus.UnmappedGError…")
    func propertyErrorNames() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        func error(_ body: () throws -> String) -> String {
            do { return "no error: \(try body())" } catch { return "\(error)" }
        }
        let missing = error {
            try fixture.call(Self.login + "/99999", Self.properties, "Get", "('org.freedesktop.Secret.Item', 'Label')")
        }
        #expect(missing.hasPrefix("org.freedesktop.Secret.Error.NoSuchObject"), "\(missing)")
        // GetAll too: GDBus, which ran it, answered an empty dictionary for an item that is not there.
        let missingAll = error {
            try fixture.call(Self.login + "/99999", Self.properties, "GetAll", "('org.freedesktop.Secret.Item',)")
        }
        #expect(missingAll.hasPrefix("org.freedesktop.Secret.Error.NoSuchObject"), "\(missingAll)")
        let missingCollection = error {
            try fixture.call("/org/freedesktop/secrets/collection/nothing", Self.properties, "GetAll",
                             "('org.freedesktop.Secret.Collection',)")
        }
        #expect(missingCollection.hasPrefix("org.freedesktop.Secret.Error.NoSuchObject"), "\(missingCollection)")
        // Names and types are checked against the declared properties, with the standard names.
        let unknown = error {
            try fixture.call(Self.login, Self.properties, "Get", "('org.freedesktop.Secret.Collection', 'Colour')")
        }
        #expect(unknown.hasPrefix("org.freedesktop.DBus.Error.UnknownProperty"), "\(unknown)")
        let wrongType = error {
            try fixture.call(Self.login, Self.properties, "Set", "('org.freedesktop.Secret.Collection', 'Label', <42>)")
        }
        #expect(wrongType.hasPrefix("org.freedesktop.DBus.Error.InvalidArgs"), "\(wrongType)")
        let readOnly = error {
            try fixture.call(Self.login, Self.properties, "Set", "('org.freedesktop.Secret.Collection', 'Locked', <true>)")
        }
        #expect(readOnly.hasPrefix("org.freedesktop.DBus.Error.PropertyReadOnly"), "\(readOnly)")
        let all = try fixture.call(Self.login, Self.properties, "GetAll", "('org.freedesktop.Secret.Collection',)")
        for name in ["Items", "Label", "Locked", "Created", "Modified"] { #expect(all.contains("'\(name)'"), "\(all)") }
        _ = try fixture.call(Self.login, Self.properties, "Set", "('org.freedesktop.Secret.Collection', 'Label', <'Renamed'>)")
        #expect(try fixture.call(Self.login, Self.properties, "Get", "('org.freedesktop.Secret.Collection', 'Label')")
                == "(<'Renamed'>,)")
        let long = String(repeating: "x", count: 70_000)
        let tooLong = error {
            try fixture.call(Self.login, Self.properties, "Set", "('org.freedesktop.Secret.Collection', 'Label', <'\(long)'>)")
        }
        #expect(tooLong.hasPrefix("org.freedesktop.DBus.Error.InvalidArgs"), "\(tooLong.prefix(200))")
        _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '\(Self.login)'],)")
        let session = try openPlainSession(fixture)
        _ = session
        let locked = error {
            try fixture.call(Self.login + "/1", Self.properties, "Set", "('org.freedesktop.Secret.Item', 'Label', <'x'>)")
        }
        #expect(!locked.contains("UnmappedGError"), "\(locked)")
    }

    @Test("SearchItems with more attributes than an item may have finds nothing (it was a storage error)")
    func searchWithTooManyAttributes() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let many = "{" + (0..<2000).map { "'a\($0)': 'v'" }.joined(separator: ", ") + "}"
        #expect(try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "(\(many),)") == "(@ao [], @ao [])")
        #expect(try fixture.call(Self.login, Self.collectionInterface, "SearchItems", "(\(many),)") == "(@ao [],)")
        let most = "{" + (0..<256).map { "'a\($0)': 'v'" }.joined(separator: ", ") + "}"
        #expect(try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "(\(most),)") == "(@ao [], @ao [])")
        #expect(!daemon.log.contains("storage error"), "\(daemon.log)")
    }
}
