import Foundation
import KeychainTestSupport
import Testing

/// The audit trail against real secretd and real clients: `secret-tool`, Python `keyring` and a
/// Swift tool on the Keychain library (secretctl) each show under their own identity, pid and
/// command line in `secretctl audit`; the trail survives a restart; filters and refusals.
@Suite struct AuditTrailTests {
    static func secretctl(_ fixture: SecretdFixture, _ arguments: [String], input: String? = nil) throws -> CommandResult {
        try fixture.run([SecretdFixture.secretctlPath] + arguments, input: input)
    }

    /// `secretctl audit --json` (with `arguments`): its entries.
    static func trail(_ fixture: SecretdFixture, _ arguments: [String] = []) throws -> [[String: Any]] {
        let result = try secretctl(fixture, ["audit", "--json"] + arguments)
        #expect(result.status == 0, "\(result.errorOutput)")
        let object = try #require(try JSONSerialization.jsonObject(with: result.output) as? [String: Any])
        return try #require(object["entries"] as? [[String: Any]])
    }

    @Test("secret-tool, Python keyring and secretctl: stores, reads and deletes are in the trail under each one's identity; kept across a restart")
    func realClients() throws {
        let fixture = try SecretdFixture()
        var daemon = try fixture.start()
        defer { daemon.stop() }
        let stored = try fixture.run(["secret-tool", "store", "--label=Mail", "service", "com.example.mail", "account", "alice"], input: "s3cret")
        #expect(stored.status == 0, "\(stored.errorOutput)")
        let looked = try fixture.run(["secret-tool", "lookup", "service", "com.example.mail", "account", "alice"])
        #expect(looked.text == "s3cret")
        let python = try fixture.run([
            "/usr/bin/python3", "-c", "import keyring, sys; keyring.set_password('py.example', 'bob', sys.stdin.read()); keyring.get_password('py.example', 'bob')",
        ], input: "pyth0n")
        #expect(python.status == 0, "\(python.errorOutput)")
        let got = try Self.secretctl(fixture, ["get", "com.example.mail", "alice"])
        #expect(got.text == "s3cret")
        let cleared = try fixture.run(["secret-tool", "clear", "service", "com.example.mail", "account", "alice"])
        #expect(cleared.status == 0)

        let trail = try Self.trail(fixture)
        func entries(_ event: String, by identity: String) -> [[String: Any]] {
            trail.filter { $0["event"] as? String == event && $0["identity"] as? String == identity }
        }
        let secretTool = "exe:/usr/bin/secret-tool"
        let pythonExe = "exe:" + URL(fileURLWithPath: "/usr/bin/python3").resolvingSymlinksInPath().path
        let secretctl = "exe:" + SecretdFixture.secretctlPath
        #expect(entries("create", by: secretTool).first?["service"] as? String == "com.example.mail", "\(trail)")
        #expect(entries("read", by: secretTool).first?["account"] as? String == "alice")
        #expect((entries("read", by: secretTool).first?["command"] as? String)?.hasPrefix("secret-tool lookup") == true)
        #expect(entries("delete", by: secretTool).first?["label"] as? String == "Mail")
        #expect(entries("create", by: pythonExe).count == 1, "\(trail.map { $0["identity"] ?? "" })")
        #expect(entries("read", by: pythonExe).first?["service"] as? String == "py.example")
        #expect(entries("read", by: secretctl).first?["service"] as? String == "com.example.mail")
        #expect(trail.allSatisfy { ($0["pid"] as? Int ?? 1) > 0 })
        // Nothing secret in it, anywhere.
        let text = try Self.secretctl(fixture, ["audit"]).text
        #expect(!text.contains("s3cret") && !text.contains("pyth0n"))

        // Filters: by identity, by item.
        #expect(try Self.trail(fixture, ["--identity", pythonExe]).allSatisfy { $0["identity"] as? String == pythonExe })
        let mail = try Self.trail(fixture, ["--item", "com.example.mail", "alice"])
        #expect(!mail.isEmpty && mail.allSatisfy { $0["service"] as? String == "com.example.mail" })
        #expect(try Self.secretctl(fixture, ["audit", "--item"]).status == 2)
        #expect(try Self.secretctl(fixture, ["audit", "--since", "yesterday-ish"]).status == 2)
        #expect(try Self.trail(fixture, ["--since", "2099-01-01"]).isEmpty)

        // A restart (SIGTERM) keeps what was read just before it.
        daemon.stop()
        try fixture.waitUntilNameIsFree()
        daemon = try fixture.start()
        let after = try Self.trail(fixture)
        #expect(after.count >= trail.count, "\(after.count) < \(trail.count)")
        #expect(!after.filter { $0["event"] as? String == "read" && $0["identity"] as? String == secretctl }.isEmpty)
    }
}
