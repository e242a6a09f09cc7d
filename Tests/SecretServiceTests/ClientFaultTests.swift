import Foundation
import KeychainTestSupport
import Testing

@testable import SecretService

/// Clients that misbehave, as real processes on the private bus: killed mid-prompt or
/// mid-write, holding hundreds of sessions, or flooding secretd with calls. Other clients keep
/// being served, and nothing a client leaves behind stays in secretd (see secretd(1), LIMITS).
/// The clients are the shared Python ones of scripts/dbus-clients (``DBusClients``).
@Suite struct ClientFaultTests: SecretServiceCalls {

    // MARK: - Helpers

    /// Starts shared client `name` (scripts/dbus-clients) on the fixture's bus, its output to `log`.
    static func python(_ fixture: SecretdFixture, _ name: String, _ arguments: [String] = [], log: String) throws
        -> SupervisedProcess
    {
        try SupervisedProcess(DBusClients.command(name, arguments), environment: fixture.environment,
                              logURL: fixture.root.appendingPathComponent(log))
    }

    /// Waits up to `timeout` seconds for `condition`.
    static func wait(_ timeout: TimeInterval, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return true }
            usleep(50_000)
        }
        return try condition()
    }

    /// Whether process `pid` exists (a zombie counts as gone).
    static func exists(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
        return !(stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") ?? true)
    }

    /// The child nodes of a path, by Introspect.
    static func children(_ fixture: SecretdFixture, _ path: String) throws -> [String] {
        try fixture.call(path, "org.freedesktop.DBus.Introspectable", "Introspect")
            .components(separatedBy: "<node name=\"").dropFirst().compactMap { $0.split(separator: "\"").first.map(String.init) }
    }

    /// A fixture whose secretd asks through the scripted pinentry.
    static func fixtureWithPinentry(answers: [String]) throws -> (SecretdFixture, ScriptedPinentry) {
        let fixture = try SecretdFixture()
        let pinentry = try ScriptedPinentry(in: fixture.root, answers: answers)
        fixture.environment.merge(pinentry.environment) { $1 }
        try fixture.writeConfiguration("pinentry = \(pinentry.program.path)\n")
        return (fixture, pinentry)
    }

    // MARK: - Disconnecting mid-prompt

    @Test("a client killed while its prompt waits on pinentry: the pinentry is closed, the prompt freed, others served, the next prompt works",
          arguments: ["unlock", "group-change", "ask-group"])
    func disconnectMidPrompt(mode: String) throws {
        let (fixture, pinentry) = try Self.fixtureWithPinentry(answers: ["WAIT"])
        if mode == "ask-group" {
            // This test process is a member of an ask-mode group; the Python client is not.
            let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let policy = fixture.configDirectory.appendingPathComponent("access-groups.conf")
            try "[group \"com.example.ask\"]\nmember = exe:\(me)\nask = yes\n".write(to: policy, atomically: true, encoding: .utf8)
            chmod(policy.path, 0o600)
        }
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try fixture.run(["secret-tool", "store", "--label=t", "fault", "later"], input: "later-value").status == 0)
        switch mode {
        case "unlock":
            _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '\(Self.login)'],)")
        case "ask-group":
            let session = try openPlainSession(fixture)
            _ = try fixture.call(Self.login, Self.collectionInterface, "CreateItem",
                                 "({'org.freedesktop.Secret.Item.Label': <'asked'>, 'org.freedesktop.Secret.Item.Attributes': "
                                     + "<{'fault': 'ask', 'keychain:access-group': 'com.example.ask'}>}, "
                                     + "\(secret(session, "asked")), false)")
        default: break
        }
        let client = try Self.python(fixture, "prompt-client.py", [mode], log: "prompt.out")
        let asking = Self.wait(30) {
            pinentry.pids.count == 1 && (pinentry.log.contains("GETPIN") || pinentry.log.contains("CONFIRM"))
        }
        #expect(asking, "pinentry never asked: \(client.log) \(daemon.log)")
        let pid = try #require(pinentry.pids.first)
        #expect(Self.exists(pid))
        #expect(Self.wait(10) { client.log.contains("/org/freedesktop/secrets/prompt/") }, "\(client.log)")
        #expect(pinentry.pids.count == 1, "Prompt called twice started \(pinentry.pids.count) pinentries")
        // While the person does not answer, other clients are served.
        #expect(try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "({'fault': 'later'},)")
            .contains("/org/freedesktop/secrets/collection/login/"))
        #expect(try Self.children(fixture, "/org/freedesktop/secrets/prompt").count == 1)

        client.crash()
        #expect(Self.wait(10) { !Self.exists(pid) }, "pinentry \(pid) is still running after its client was killed")
        #expect(Self.wait(10) { (try? Self.children(fixture, "/org/freedesktop/secrets/prompt").isEmpty) == true })
        #expect(daemon.log.contains("disconnected; its pinentry is closed"), "\(daemon.log)")
        #expect(!daemon.log.contains("cannot ask"), "\(daemon.log)")

        // The next prompt works: unlocking the login keyring through pinentry.
        try pinentry.setAnswers(["login-password"])
        _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '\(Self.login)'],)")
        let lookup = try fixture.run(["secret-tool", "lookup", "fault", "later"])
        #expect(lookup.text == "later-value", "\(lookup.errorOutput) \(daemon.log)")
        #expect(pinentry.pids.count == 2)
        #expect(daemon.isRunning)
    }

    @Test("Dismiss while pinentry asks closes the pinentry and completes the prompt as dismissed")
    func dismissMidPrompt() throws {
        let (fixture, pinentry) = try Self.fixtureWithPinentry(answers: ["WAIT"])
        let daemon = try fixture.start()
        defer { daemon.stop() }
        _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '\(Self.login)'],)")
        let reply = try fixture.call(Self.service, Self.serviceInterface, "Unlock", "([objectpath '\(Self.login)'],)")
        let prompt = try #require(objectPaths(in: reply).last)
        let recorder = SignalRecorder(listeningOn: fixture.control)  // Completed goes to the prompt's owner only
        _ = try fixture.call(prompt, "org.freedesktop.Secret.Prompt", "Prompt", "('',)")
        #expect(Self.wait(30) { pinentry.log.contains("GETPIN") })
        let pid = try #require(pinentry.pids.first)
        _ = try fixture.call(prompt, "org.freedesktop.Secret.Prompt", "Dismiss")
        #expect(recorder.wait(for: "Completed", path: prompt, timeout: 30)?.arguments.hasPrefix("(true,") == true)
        #expect(Self.wait(10) { !Self.exists(pid) }, "pinentry \(pid) still runs after Dismiss")
        #expect(try Self.children(fixture, "/org/freedesktop/secrets/prompt").isEmpty)
    }

    // MARK: - Disconnecting mid-session

    @Test("writers with DH sessions killed mid-write: their sessions are freed, no item is half-written, every acknowledged one is there")
    func disconnectMidSession() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        var names: [String] = []
        var random = SeededRandom(printingSeedFor: "\(#function)")
        for round in 0..<4 {
            let round = (0..<4).map { "r\(round)w\($0)" }
            names += round
            let writers = try round.map { try Self.python(fixture, "writer.py", [$0], log: "\($0).out") }
            #expect(Self.wait(30) { writers.allSatisfy { $0.log.contains("ack 1\n") } }, "\(writers.map(\.log))")
            usleep(UInt32.random(in: 200_000...900_000, using: &random))
            for writer in writers { writer.crash() }
            // Their sessions (several each, all DH) go away with them.
            let freed = Self.wait(20) { (try? Self.children(fixture, "/org/freedesktop/secrets/session").isEmpty) == true }
            let left = (try? Self.children(fixture, "/org/freedesktop/secrets/session")) ?? []
            #expect(freed, "sessions left after round \(round): \(left)")
        }
        let verifier = try Self.python(fixture, "writer-verifier.py", names, log: "verify.out")
        #expect(verifier.waitForExit(timeout: 120) == 0, "\(verifier.log)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(verifier.log.utf8)) as? [String: [String: [Int]]],
                                  "\(verifier.log)")
        var acknowledged = 0
        for name in names {
            let log = (try? String(contentsOf: fixture.root.appendingPathComponent("\(name).out"), encoding: .utf8)) ?? ""
            let acks = Set(log.split(separator: "\n").filter { $0.hasPrefix("ack ") }.compactMap { Int($0.dropFirst(4)) })
            let started = log.split(separator: "\n").filter { $0.hasPrefix("start ") }.compactMap { Int($0.dropFirst(6)) }
            let inFlight = started.last.flatMap { acks.contains($0) ? nil : $0 }
            let found = Set(report[name]?["found"] ?? [])
            acknowledged += acks.count
            #expect(report[name]?["bad"] == [], "\(name): items not as written: \(report[name]?["bad"] ?? [])")
            #expect(acks.isSubset(of: found), "\(name): acknowledged but missing: \(acks.subtracting(found).sorted())")
            #expect(found.subtracting(acks).subtracting(inFlight.map { [$0] } ?? []).isEmpty,
                    "\(name): items never written: \(found.subtracting(acks).sorted())")
        }
        print("mid-session kills: \(names.count) writers, \(acknowledged) acknowledged items, all intact")
        #expect(acknowledged >= names.count)
        #expect(daemon.isRunning)
    }

    // MARK: - Hundreds of sessions

    // What these sessions cost secretd in memory, and what it gives back when the client
    // goes, is a figure of `make bench` (the `sessions` scenario), not a test: it depends on
    // when malloc returns memory (bench/README.md).
    @Test("a client opening 500 sessions keeps its 256 most recently used; others are served; its sessions go when it does")
    func hundredsOfSessions() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try fixture.run(["secret-tool", "store", "--label=t", "fault", "sessions"], input: "still-here").status == 0)
        let hoarder = try Self.python(fixture, "session-hoarder.py", log: "hoarder.out")
        #expect(Self.wait(120) { hoarder.log.contains("\"opened\"") }, "\(hoarder.log)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(hoarder.log.utf8)) as? [String: Any], "\(hoarder.log)")
        #expect(report["opened"] as? Int == 500)
        // The first session (in use all along) and the last 255 work; the 244 others were closed.
        #expect(report["usable"] as? [Int] == [0] + Array(245..<500), "\(report["usable"] ?? "")")
        #expect(report["errors"] as? [String] == ["org.freedesktop.Secret.Error.NoSession"])
        #expect(try Self.children(fixture, "/org/freedesktop/secrets/session").count == 256)
        #expect(daemon.log.contains("has 256 sessions open"), "\(daemon.log)")
        // Meanwhile other clients are served.
        #expect(try fixture.run(["secret-tool", "lookup", "fault", "sessions"]).text == "still-here")

        hoarder.crash()
        #expect(Self.wait(20) { (try? Self.children(fixture, "/org/freedesktop/secrets/session").isEmpty) == true })
        #expect(daemon.isRunning)
    }

    @Test("a client may have 32 prompts waiting; more are refused with LimitsExceeded, and they go when it does")
    func promptLimit() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '\(Self.login)'],)")
        let hoarder = try Self.python(fixture, "prompt-hoarder.py", log: "prompts.out")
        #expect(Self.wait(60) { hoarder.log.contains("\"prompts\"") }, "\(hoarder.log)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(hoarder.log.utf8)) as? [String: Any])
        #expect(report["prompts"] as? Int == 32)
        #expect(report["errors"] as? [String] == Array(repeating: "org.freedesktop.DBus.Error.LimitsExceeded", count: 8))
        // Another client still gets a prompt of its own.
        let reply = try fixture.call(Self.service, Self.serviceInterface, "Unlock", "([objectpath '\(Self.login)'],)")
        #expect(reply.contains("/org/freedesktop/secrets/prompt/p"), "\(reply)")
        hoarder.crash()
        #expect(Self.wait(20) { (try? Self.children(fixture, "/org/freedesktop/secrets/prompt").count) == 1 })
    }

    // MARK: - Flooding

    // secretd's memory under the flood, at its peak and after, is a figure of `make bench`
    // (the `flood` scenario), not a test: it depends on when malloc returns memory.
    @Test("flooding clients (reading, not reading, or expecting no replies) on a session-sized bus: others are served, the call quota engages")
    func flood() throws {
        let seconds = Double(ProcessInfo.processInfo.environment["FAULT_FLOOD_SECONDS"] ?? "") ?? 10
        let fixture = try SecretdFixture()
        fixture.environment["G_SLICE"] = "always-malloc"  // as the systemd unit runs it
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let flooders = try ["reading", "deaf", "silent"].map {
            try Self.python(fixture, "flooder.py", [$0, String(seconds)], log: "flood-\($0).out")
        }
        let victim = try Self.python(fixture, "victim.py", [String(seconds)], log: "victim.out")
        #expect(victim.waitForExit(timeout: seconds + 190) == 0, "\(victim.log)")
        for flooder in flooders { #expect(flooder.waitForExit(timeout: 60) == 0, "\(flooder.log)") }
        let report = try #require(try JSONSerialization.jsonObject(with: Data(victim.log.utf8)) as? [String: Any], "\(victim.log)")
        print("flood for \(Int(seconds)) s: \(flooders.map { $0.log.trimmingCharacters(in: .whitespacesAndNewlines) })")
        print("flood: the other client: \(report)")
        #expect(report["failures"] as? [String] == [], "\(report["failures"] ?? "")")
        #expect((report["operations"] as? Int ?? 0) > 0)
        #expect(daemon.log.contains("refused with LimitsExceeded"), "the call quota never came into play")
        #expect(daemon.isRunning)
        #expect(try fixture.call(Self.service, Self.serviceInterface, "ReadAlias", "('default',)")
                == "(objectpath '\(Self.login)',)")
    }

    @Test("calls that carry file descriptors cannot use up secretd's open files: 300 calls with 16 each at systemd's default soft limit of 1024, then floods from connections enough to pass all clients' limit; secretd keeps its connection and answers every call")
    func descriptorFlood() throws {
        // Every message may carry descriptors, named by its arguments or not, and secretd holds
        // them while the call waits its turn. When the kernel cannot hand the next ones over,
        // sd-bus gives up the whole connection; secretd raises its soft limit to the hard one.
        try #require(OpenFileLimit.hard >= 8192, "this test needs a hard limit of open files of 8192 or more (ulimit -Hn), as systemd gives")
        // Clients enough to pass all clients' limit, each as far as its own: held, their
        // descriptors would be many times the hard limit; all clients together are held to it.
        let quota = Limits.callQuota(openFiles: OpenFileLimit.hard)
        let calls = quota.calls + 100
        let flooderCount = quota.allClients / quota.calls + 2
        // The bus has the same hard limit as secretd (20,000 in a container, where a user's bus
        // under systemd has 524,288): it takes each flooder's descriptors only while its share
        // is free, or it would cut the flooders off when it can take no more.
        let fixture = try SecretdFixture(busDescriptorsPerClient: (OpenFileLimit.hard - 1024) / (flooderCount + 1))
        let daemon = try SupervisedProcess(
            ["/bin/sh", "-c", "ulimit -Sn 1024 && exec \"$0\" \"$@\"", SecretdFixture.secretdPath, "--foreground",
             "--data-dir", fixture.dataDirectory.path, "--config-dir", fixture.configDirectory.path, "--unlock"],
            environment: fixture.environment, standardInput: Data("login-password".utf8),
            logURL: fixture.root.appendingPathComponent("secretd.log"))
        defer { daemon.stop() }
        try fixture.control.waitForOwner(of: TestEnvironment.busName, startedBy: daemon)
        let owner = try DBusFuzzTests.owner(fixture)
        let flood = try fixture.runClient("fd-flooder.py", ["300", "16"])
        let report = try #require(try JSONSerialization.jsonObject(with: Data(flood.text.utf8)) as? [String: Any], "\(flood.text) \(flood.errorOutput)")
        #expect(report["outcomes"] as? [String: Int] == ["reply": 300], "\(report) \(daemon.log.suffix(2000))")
        let flooders = try (0..<flooderCount).map {
            try Self.python(fixture, "fd-flooder.py", [String(calls), "16"], log: "fd-flood-\($0).out")
        }
        // secretd busy for a while as the floods begin (as on a loaded machine): they pile up
        // in the bus, then all reach secretd at once.
        let secretd = try #require(daemon.helperPID)
        kill(secretd, SIGSTOP)
        usleep(2_000_000)
        kill(secretd, SIGCONT)
        for flooder in flooders {
            #expect(flooder.waitForExit(timeout: 120) == 0, "\(flooder.log)")
            let report = try? JSONSerialization.jsonObject(with: Data(flooder.log.utf8)) as? [String: Any]
            let outcomes = report?["outcomes"] as? [String: Int] ?? [:]
            #expect(outcomes.values.reduce(0, +) == calls, "\(flooder.log)")
            let kinds = Set(outcomes.keys)
            #expect(kinds.isSubset(of: ["reply", "org.freedesktop.DBus.Error.LimitsExceeded"]), "\(flooder.log)")
        }
        #expect(daemon.log.contains("calls from all clients are waiting"), "\(daemon.log.suffix(2000))")
        #expect(daemon.isRunning)
        #expect(!daemon.log.contains("the session bus is gone"), "\(daemon.log.suffix(2000))")
        #expect(try DBusFuzzTests.owner(fixture) == owner, "secretd's connection changed")
        #expect(try fixture.call(Self.service, Self.serviceInterface, "ReadAlias", "('default',)")
                == "(objectpath '\(Self.login)',)")
    }
}
