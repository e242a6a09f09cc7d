import Foundation
import KeychainTestSupport
import Testing

/// Lookups answered in GDBus's worker thread (GIO+QuickReads.swift): real clients get them
/// there, and they never overtake the calls before them nor show a write before it is done.
/// A debug secretd started with `SECRETD_TRACE_QUICK_READS` logs each such answer.
@Suite struct QuickReadTests: SecretServiceCalls {
    /// A fixture whose secretd logs its quick reads.
    static func tracingFixture() throws -> SecretdFixture {
        let fixture = try SecretdFixture()
        fixture.environment["SECRETD_TRACE_QUICK_READS"] = "1"
        return fixture
    }

    /// How many quick answers to `method` the daemon logged.
    static func quickAnswers(_ method: String, in daemon: SupervisedProcess) -> Int {
        daemon.log.components(separatedBy: "answered \(method) in GDBus's thread").count - 1
    }

    @Test("secret-tool and Python secretstorage lookups are answered in GDBus's thread, with the right secrets")
    func realClients() throws {
        let fixture = try Self.tracingFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try fixture.run(["secret-tool", "store", "--label=Mail", "service", "mail", "account", "alice"], input: "s3cr3t").status == 0)
        #expect(try fixture.run(["secret-tool", "store", "--label=Mail", "service", "mail", "account", "bob"], input: "hunter2").status == 0)
        // A call goes to the main loop instead when the main loop is busy at that moment (other
        // tests run alongside): several lookups, and at least one answered at once of each kind.
        for _ in 0..<5 {
            #expect(try fixture.run(["secret-tool", "lookup", "service", "mail", "account", "alice"]).text == "s3cr3t")
            #expect(try fixture.run(["secret-tool", "lookup", "service", "mail", "account", "bob"]).text == "hunter2")
        }
        #expect(Self.quickAnswers("SearchItems", in: daemon) >= 1, "\(daemon.log)")
        #expect(Self.quickAnswers("GetSecrets", in: daemon) >= 1, "\(daemon.log)")

        let python = try fixture.runPython(#"""
            import secretstorage
            conn = secretstorage.dbus_init()
            coll = secretstorage.get_default_collection(conn)
            for _ in range(5):
                for account in ("alice", "bob", "carol"):
                    items = list(coll.search_items({"service": "mail", "account": account}))
                    print(account, items[0].get_secret().decode() if items else "-")
            """#, named: "lookup.py")
        #expect(python.text == String(repeating: "alice s3cr3t\nbob hunter2\ncarol -\n", count: 5), "\(python.errorOutput)")
        #expect(Self.quickAnswers("GetSecret", in: daemon) >= 1, "\(daemon.log)")

        // Locked: the same calls, still answered at once, give nothing away.
        _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '/org/freedesktop/secrets/collection/login'],)")
        let locked = try fixture.run(["secret-tool", "lookup", "service", "mail", "account", "alice"])
        #expect(locked.status == 1 && locked.text.isEmpty)
        #expect(daemon.isRunning)
    }

    @Test("a client's first call, bad arguments and large calls go to the main loop and are answered as before")
    func notQuick() throws {
        let fixture = try Self.tracingFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try fixture.run(["secret-tool", "store", "--label=Mail", "service", "mail", "account", "alice"], input: "s3cr3t").status == 0)

        // First call of a new connection: it must be identified first (the main loop asks the bus).
        let before = Self.quickAnswers("SearchItems", in: daemon)
        let found = try fixture.runClient("first-call.py")
        #expect(found.text == "1 0\n", "\(found.errorOutput)")
        #expect(Self.quickAnswers("SearchItems", in: daemon) == before)

        // Wrong argument types: GDBus's own refusal, from the main loop's dispatch.
        #expect(refusal {
            try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "(@a{sv} {},)")
        } == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(refusal {
            try fixture.call(Self.service, Self.serviceInterface, "GetSecrets", "(@ao [], 'not a path')")
        } == "org.freedesktop.DBus.Error.InvalidArgs")
        // Searching everything, and more secrets than a quick read takes, still work.
        let all = try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "(@a{ss} {},)")
        #expect(all.contains("/org/freedesktop/secrets/collection/login/"))
        let session = try openPlainSession(fixture)
        let path = try #require(all.split(separator: "'").first { $0.hasPrefix("/org/freedesktop/secrets/collection/login/") })
        let many = Array(repeating: "objectpath '\(path)'", count: 40).joined(separator: ", ")
        let secrets = try fixture.call(Self.service, Self.serviceInterface, "GetSecrets", "([\(many)], objectpath '\(session)')")
        #expect(secrets.contains("s3cr3t") || secrets.contains("[byte 0x73, 0x33"), "\(secrets)")
        #expect(Self.quickAnswers("GetSecrets", in: daemon) == 0)
        #expect(daemon.isRunning)
    }
}
