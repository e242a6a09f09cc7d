import KeychainCore
import Foundation
import KeychainTestSupport
import Testing

/// Scoped runs (`secretctl run`) against real secretd and real clients: what COMMAND, and
/// everything it starts (a new session, a nested sandbox, more connections), may read and
/// create; the run's name in the audit trail; nothing left running after it.
@Suite struct ScopedRunTests {
    static func secretctl(_ fixture: SecretdFixture, _ arguments: [String], input: String? = nil) throws -> CommandResult {
        try fixture.run([SecretdFixture.secretctlPath] + arguments, input: input)
    }

    /// `secretctl run ARGUMENTS`.
    static func run(_ fixture: SecretdFixture, _ arguments: [String], input: String? = nil) throws -> CommandResult {
        try secretctl(fixture, ["run"] + arguments, input: input)
    }

    @Test("a run sees only what it is allowed: secret-tool, Python keyring, a new session, a nested sandbox; creates only what it names")
    func allowed() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try Self.secretctl(fixture, ["set", "svc-a", "ann"], input: "secret-a").status == 0)
        #expect(try Self.secretctl(fixture, ["set", "svc-a", "bob"], input: "secret-a-bob").status == 0)
        #expect(try Self.secretctl(fixture, ["set", "svc-b", "ann"], input: "secret-b").status == 0)
        let stored = try fixture.run(["/usr/bin/python3", "-c", "import keyring; keyring.set_password('py.svc', 'ann', 'py-secret')"])
        #expect(stored.status == 0, "\(stored.errorOutput)")

        let allow = ["--name", "job", "--allow", "svc-a:ann", "--allow", "py.svc", "--"]
        #expect(try Self.run(fixture, allow + ["secret-tool", "lookup", "service", "svc-a", "account", "ann"]).text == "secret-a")
        #expect(try Self.run(fixture, allow + ["secret-tool", "lookup", "service", "svc-a", "account", "bob"]).text.isEmpty)
        #expect(try Self.run(fixture, allow + ["secret-tool", "lookup", "service", "svc-b", "account", "ann"]).text.isEmpty)
        let search = try Self.run(fixture, allow + ["secret-tool", "search", "--all", "account", "ann"])
        #expect(search.text.contains("svc-a") && !search.text.contains("svc-b"), "\(search.text)")
        let python = try Self.run(fixture, allow + ["/usr/bin/python3", "-c", "import keyring; print(keyring.get_password('py.svc', 'ann'))"])
        #expect(python.text == "py-secret\n", "\(python.errorOutput)")
        // A new session, and a sandbox of its own inside the run, are still in it.
        #expect(try Self.run(fixture, allow + ["setsid", "-w", "secret-tool", "lookup", "service", "svc-b", "account", "ann"]).text.isEmpty)
        #expect(try Self.run(fixture, allow + ["setsid", "-w", "secret-tool", "lookup", "service", "svc-a", "account", "ann"]).text == "secret-a")
        let nested = ["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "--"]
        #expect(try Self.run(fixture, allow + nested + ["secret-tool", "lookup", "service", "svc-b", "account", "ann"]).text.isEmpty)
        #expect(try Self.run(fixture, allow + nested + ["secret-tool", "lookup", "service", "svc-a", "account", "ann"]).text == "secret-a")

        // It creates and replaces only what an allowance names (in default, where its owner sees it).
        let created = try Self.run(fixture, ["--allow", "svc-c:carl", "--", "secret-tool", "store", "--label", "C", "service", "svc-c", "account", "carl"],
                                   input: "secret-c")
        #expect(created.status == 0, "\(created.errorOutput)")
        #expect(try fixture.run(["secret-tool", "lookup", "service", "svc-c", "account", "carl"]).text == "secret-c")
        let other = try Self.run(fixture, ["--allow", "svc-c:carl", "--", "secret-tool", "store", "--label", "D", "service", "svc-d"], input: "x")
        #expect(other.status != 0 && other.errorOutput.contains("may create only"), "\(other.errorOutput)")
        #expect(try fixture.run(["secret-tool", "lookup", "service", "svc-d"]).text.isEmpty)

        // Inside, it is run:NAME, confined; secretd's management is closed to it.
        let whoami = try Self.run(fixture, ["--name", "job", "--", SecretdFixture.secretctlPath, "whoami"])
        #expect(whoami.text.contains("run:job"), "\(whoami.text)")
        #expect(try Self.run(fixture, ["--", SecretdFixture.secretctlPath, "audit"]).status == 4)
        #expect(try Self.run(fixture, ["--", SecretdFixture.secretctlPath, "consent", "list"]).status == 4)
        #expect(try Self.run(fixture, ["--", SecretdFixture.secretctlPath, "run", "--", "true"]).status == 4)

        // The trail names the run.
        let trail = try Self.secretctl(fixture, ["audit", "--json", "--identity", "run:job"])
        let object = try #require(try JSONSerialization.jsonObject(with: trail.output) as? [String: Any])
        let entries = try #require(object["entries"] as? [[String: Any]])
        #expect(entries.contains { $0["event"] as? String == "read" && $0["service"] as? String == "svc-a" }, "\(entries)")
        #expect(entries.allSatisfy { $0["service"] as? String != "svc-b" })
        // Outside the run, nothing changed.
        #expect(try fixture.run(["secret-tool", "lookup", "service", "svc-b", "account", "ann"]).text == "secret-b")
    }

    @Test("the run ends with COMMAND: its exit status, nothing left running; a bad run is refused before COMMAND starts")
    func lifetime() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try Self.run(fixture, ["--", "sh", "-c", "exit 7"]).status == 7)
        let marker = fixture.root.appendingPathComponent("left-behind").path
        let started = try Self.run(fixture, ["--", "sh", "-c", "(sleep 3; touch \(marker)) & echo started"])
        #expect(started.text == "started\n")
        Thread.sleep(forTimeInterval: 4)
        #expect(!FileManager.default.fileExists(atPath: marker), "a process of the run outlived it")
        #expect(daemon.log.contains("began the run") && daemon.log.contains("ended the run"), "\(daemon.log)")

        // Refused: a bad group, an allowance without a service; COMMAND never runs.
        let ran = fixture.root.appendingPathComponent("ran").path
        #expect(try Self.run(fixture, ["--group", "not a group", "--", "touch", ran]).status == 2)
        #expect(try Self.run(fixture, ["--allow", ":ann", "--", "touch", ran]).status == 2)
        // secretd refuses the run (a bad name), or is not there: COMMAND never runs.
        let badName = try Self.run(fixture, ["--name", "two words", "--", "touch", ran])
        #expect(badName.status != 0 && badName.errorOutput.contains("name"), "\(badName.errorOutput)")
        var elsewhere = fixture.environment
        elsewhere["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=/nonexistent"
        for _ in 0..<5 {
            let noProvider = try CommandResult.run(
                [SecretdFixture.secretctlPath, "run", "--", "touch", ran], input: nil, environment: elsewhere, scratch: fixture.root, timeout: 60)
            #expect(noProvider.status == 5, "\(noProvider.errorOutput)")
        }
        #expect(!FileManager.default.fileExists(atPath: ran))
        // Begin for a process the caller did not start is refused.
        let begin = try? fixture.call(
            "/org/freedesktop/secrets", "io.github.secretd.Runs1", "Begin", "('x', @a(ss) [], '', uint32 1)")
        #expect(begin == nil)
    }

    @Test("a run goes on across a restart of secretd: a client of the run that connects after it still sees only what it is allowed")
    func acrossRestart() throws {
        let fixture = try SecretdFixture()
        var daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try Self.secretctl(fixture, ["set", "svc-a", "ann"], input: "secret-a").status == 0)
        #expect(try Self.secretctl(fixture, ["set", "svc-b", "ann"], input: "secret-b").status == 0)
        let go = fixture.root.appendingPathComponent("go").path
        let out = fixture.root.appendingPathComponent("run.out").path
        let script = "while [ ! -e \(go) ]; do sleep 0.1; done; "
            + "echo a=$(secret-tool lookup service svc-a account ann) b=$(secret-tool lookup service svc-b account ann)"
        let started = try fixture.run(["sh", "-c", "\(SecretdFixture.secretctlPath) run --name long --allow svc-a -- sh -c '\(script)' >\(out) 2>&1 &"])
        #expect(started.status == 0)
        for _ in 0..<100 where !daemon.log.contains("began the run long") { usleep(50_000) }
        #expect(daemon.log.contains("began the run long"), "\(daemon.log)")

        daemon.stop()
        try fixture.waitUntilNameIsFree()
        daemon = try fixture.start()
        #expect(daemon.log.contains("the run long goes on from before secretd started"), "\(daemon.log)")
        FileManager.default.createFile(atPath: go, contents: nil)
        var text = ""
        for _ in 0..<200 {
            text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            if text.contains("b=") { break }
            usleep(50_000)
        }
        #expect(text == "a=secret-a b=\n", "\(text)")
        for _ in 0..<100 where !daemon.log.contains("ended the run long") { usleep(50_000) }
        #expect(daemon.log.contains("ended the run long"), "\(daemon.log)")
    }
}
