import Foundation
import KeychainTestSupport
import Testing

/// Lookups as real clients make them (a search, then the secrets), right after the writes
/// before them, and the refusals around them.
@Suite struct LookupTests: SecretServiceCalls {
    @Test("secret-tool and Python secretstorage lookups get the right secrets, and nothing while locked")
    func realClients() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try fixture.run(["secret-tool", "store", "--label=Mail", "service", "mail", "account", "alice"], input: "s3cr3t").status == 0)
        #expect(try fixture.run(["secret-tool", "store", "--label=Mail", "service", "mail", "account", "bob"], input: "hunter2").status == 0)
        for _ in 0..<5 {
            #expect(try fixture.run(["secret-tool", "lookup", "service", "mail", "account", "alice"]).text == "s3cr3t")
            #expect(try fixture.run(["secret-tool", "lookup", "service", "mail", "account", "bob"]).text == "hunter2")
        }

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

        // Locked: the same calls give nothing away.
        _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '/org/freedesktop/secrets/collection/login'],)")
        let locked = try fixture.run(["secret-tool", "lookup", "service", "mail", "account", "alice"])
        #expect(locked.status == 1 && locked.text.isEmpty)
        #expect(daemon.isRunning)
    }

    @Test("a client's first call, arguments of the wrong types, searching everything and 40 secrets at once")
    func aroundLookups() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try fixture.run(["secret-tool", "store", "--label=Mail", "service", "mail", "account", "alice"], input: "s3cr3t").status == 0)

        // First call of a new connection: it is identified first (secretd asks the bus).
        let found = try fixture.runClient("first-call.py")
        #expect(found.text == "1 0\n", "\(found.errorOutput)")

        // Wrong argument types: refused against the method's declaration.
        #expect(refusal {
            try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "(@a{sv} {},)")
        } == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(refusal {
            try fixture.call(Self.service, Self.serviceInterface, "GetSecrets", "(@ao [], 'not a path')")
        } == "org.freedesktop.DBus.Error.InvalidArgs")
        // Searching everything, and many secrets at once.
        let all = try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "(@a{ss} {},)")
        #expect(all.contains("/org/freedesktop/secrets/collection/login/"))
        let session = try openPlainSession(fixture)
        let path = try #require(all.split(separator: "'").first { $0.hasPrefix("/org/freedesktop/secrets/collection/login/") })
        let many = Array(repeating: "objectpath '\(path)'", count: 40).joined(separator: ", ")
        let secrets = try fixture.call(Self.service, Self.serviceInterface, "GetSecrets", "([\(many)], objectpath '\(session)')")
        #expect(secrets.contains("s3cr3t") || secrets.contains("[byte 0x73, 0x33"), "\(secrets)")
        #expect(daemon.isRunning)
    }
}
