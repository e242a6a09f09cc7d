import Foundation
import KeychainTestSupport
import Testing

/// Clients that misbehave, as real processes on the private bus: killed mid-prompt or
/// mid-write, holding hundreds of sessions, or flooding secretd with calls. Other clients keep
/// being served, and nothing a client leaves behind stays in secretd (see secretd(1), LIMITS).
@Suite struct ClientFaultTests: SecretServiceCalls {

    // MARK: - Helpers

    /// Python (jeepney) helpers the client scripts share: a call with a deadline, and an error
    /// as its D-Bus name.
    static let prelude = #"""
        import sys, os, time, json, hashlib
        from jeepney import DBusAddress, new_method_call, MessageType, MessageFlag
        from jeepney.io.blocking import open_dbus_connection
        from jeepney.low_level import HeaderFields
        B = "org.freedesktop.secrets"
        ROOT = "/org/freedesktop/secrets"
        LOGIN = ROOT + "/collection/login"
        def address(path, interface):
            return DBusAddress(path, bus_name=B, interface=interface)
        SERVICE = address(ROOT, "org.freedesktop.Secret.Service")
        def call(conn, addr, method, signature="", body=(), timeout=60):
            """The reply's body, or raises RuntimeError(error name)."""
            reply = conn.send_and_get_reply(new_method_call(addr, method, signature, body), timeout=timeout)
            if reply.header.message_type == MessageType.error:
                raise RuntimeError(reply.header.fields.get(HeaderFields.error_name, "?"))
            return reply.body
        def content(name, n):
            """The secret writer `name` stores as item `n`: 16 to 64 KiB, known from the two alone."""
            seed = hashlib.sha256(("%s-%d" % (name, n)).encode()).digest()
            return (seed * 2048)[: 16384 * (1 + n % 4)]

        """#

    /// Writes `body` (after the prelude) as a script in the fixture's tree.
    static func script(_ fixture: SecretdFixture, _ name: String, _ body: String) throws -> String {
        let url = fixture.root.appendingPathComponent(name)
        try (prelude + body).write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    /// Starts `/usr/bin/python3 script arguments` on the fixture's bus.
    static func python(_ fixture: SecretdFixture, _ script: String, _ arguments: [String] = [], log: String) throws
        -> SupervisedProcess
    {
        try SupervisedProcess(["/usr/bin/python3", script] + arguments, environment: fixture.environment,
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

    /// Starts a prompt (`unlock`: of the locked login keyring; `group-change`: adding a member to
    /// an access group; `ask-group`: using an item of an ask-mode group), calls Prompt twice,
    /// prints the prompt's path and waits to be killed.
    static let promptClient = #"""
        mode = sys.argv[1]
        conn = open_dbus_connection(bus="SESSION")
        if mode == "unlock":
            prompt = call(conn, SERVICE, "Unlock", "ao", ([LOGIN],))[1]
        elif mode == "group-change":
            groups = address(ROOT, "io.github.secretd.AccessGroups1")
            prompt = call(conn, groups, "AddMember", "ss(oayays)", ("com.example.ask", "exe:/usr/bin/true", ("/", b"", b"", "")))[0]
        else:
            unlocked, locked = call(conn, SERVICE, "SearchItems", "a{ss}", ({"fault": "ask"},))
            prompt = call(conn, SERVICE, "Unlock", "ao", (locked,))[1]
        p = address(prompt, "org.freedesktop.Secret.Prompt")
        call(conn, p, "Prompt", "s", ("",))
        call(conn, p, "Prompt", "s", ("",))  # asking again must not start a second pinentry
        print(prompt, flush=True)
        time.sleep(600)
        """#

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
        let client = try Self.python(fixture, try Self.script(fixture, "prompt.py", Self.promptClient), [mode], log: "prompt.out")
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
        let recorder = try SignalRecorder(address: fixture.bus.address)
        _ = try fixture.call(prompt, "org.freedesktop.Secret.Prompt", "Prompt", "('',)")
        #expect(Self.wait(30) { pinentry.log.contains("GETPIN") })
        let pid = try #require(pinentry.pids.first)
        _ = try fixture.call(prompt, "org.freedesktop.Secret.Prompt", "Dismiss")
        #expect(recorder.wait(for: "Completed", path: prompt, timeout: 30)?.arguments.hasPrefix("(true,") == true)
        #expect(Self.wait(10) { !Self.exists(pid) }, "pinentry \(pid) still runs after Dismiss")
        #expect(try Self.children(fixture, "/org/freedesktop/secrets/prompt").isEmpty)
    }

    // MARK: - Disconnecting mid-session

    /// Opens a DH session (and another every ten items) and stores items as fast as it can,
    /// printing `start N` before each CreateItem and `ack N` after its reply.
    static let writerClient = #"""
        from secretstorage.util import open_session, format_secret
        name = sys.argv[1]
        conn = open_dbus_connection(bus="SESSION")
        session = open_session(conn)
        assert session.encrypted
        collection = address(LOGIN, "org.freedesktop.Secret.Collection")
        n = 0
        while True:
            n += 1
            if n % 10 == 0:
                open_session(conn)  # a session it never uses nor closes
            properties = {"org.freedesktop.Secret.Item.Label": ("s", "fault %s %d" % (name, n)),
                          "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"fault-writer": name, "n": str(n)})}
            print("start %d" % n, flush=True)
            call(conn, collection, "CreateItem", "a{sv}(oayays)b",
                 (properties, format_secret(session, content(name, n), "application/octet-stream"), False))
            print("ack %d" % n, flush=True)
        """#

    /// Prints, per writer, the items it finds (by `n`) and those whose label, attributes,
    /// content type or secret is not what the writer stored.
    static let writerVerifier = #"""
        conn = open_dbus_connection(bus="SESSION")
        session = call(conn, SERVICE, "OpenSession", "sv", ("plain", ("s", "")))[1]
        report = {}
        for name in sys.argv[1:]:
            found, bad = [], []
            for path in call(conn, SERVICE, "SearchItems", "a{ss}", ({"fault-writer": name},))[0]:
                item = address(path, "org.freedesktop.Secret.Item")
                props = address(path, "org.freedesktop.DBus.Properties")
                attributes = call(conn, props, "Get", "ss", ("org.freedesktop.Secret.Item", "Attributes"))[0][1]
                n = int(attributes["n"])
                label = call(conn, props, "Get", "ss", ("org.freedesktop.Secret.Item", "Label"))[0][1]
                _, _, secret, content_type = call(conn, item, "GetSecret", "o", (session,))[0]
                found.append(n)
                if (secret != content(name, n) or label != "fault %s %d" % (name, n)
                        or attributes != {"fault-writer": name, "n": str(n)} or content_type != "application/octet-stream"):
                    bad.append(n)
            report[name] = {"found": sorted(found), "bad": bad}
        print(json.dumps(report))
        """#

    @Test("writers with DH sessions killed mid-write: their sessions are freed, no item is half-written, every acknowledged one is there")
    func disconnectMidSession() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let writer = try Self.script(fixture, "writer.py", Self.writerClient)
        var names: [String] = []
        var random = SeededRandom(printingSeedFor: "\(#function)")
        for round in 0..<4 {
            let round = (0..<4).map { "r\(round)w\($0)" }
            names += round
            let writers = try round.map { try Self.python(fixture, writer, [$0], log: "\($0).out") }
            #expect(Self.wait(30) { writers.allSatisfy { $0.log.contains("ack 1\n") } }, "\(writers.map(\.log))")
            usleep(UInt32.random(in: 200_000...900_000, using: &random))
            for writer in writers { writer.crash() }
            // Their sessions (several each, all DH) go away with them.
            let freed = Self.wait(20) { (try? Self.children(fixture, "/org/freedesktop/secrets/session").isEmpty) == true }
            let left = (try? Self.children(fixture, "/org/freedesktop/secrets/session")) ?? []
            #expect(freed, "sessions left after round \(round): \(left)")
        }
        let verifier = try Self.python(fixture, try Self.script(fixture, "verify.py", Self.writerVerifier), names, log: "verify.out")
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

    /// Opens 500 sessions (plain and DH in turn), using the first one every 50 openings; then
    /// reports which still work, and waits to be killed.
    static let sessionHoarder = #"""
        from secretstorage.dhcrypto import Session as DH, int_to_bytes
        conn = open_dbus_connection(bus="SESSION")
        paths = []
        for i in range(500):
            if i % 2:
                body = ("plain", ("s", ""))
            else:
                body = ("dh-ietf1024-sha256-aes128-cbc-pkcs7", ("ay", int_to_bytes(DH().my_public_key)))
            paths.append(call(conn, SERVICE, "OpenSession", "sv", body)[1])
            if i % 50 == 0:
                call(conn, SERVICE, "GetSecrets", "aoo", ([], paths[0]))  # keeps the first one in use
        usable, errors = [], set()
        for index, path in enumerate(paths):
            try:
                call(conn, SERVICE, "GetSecrets", "aoo", ([], path))
                usable.append(index)
            except RuntimeError as error:
                errors.add(str(error))
        print(json.dumps({"opened": len(paths), "usable": usable, "errors": sorted(errors)}), flush=True)
        time.sleep(600)
        """#

    // What these sessions cost secretd in memory, and what it gives back when the client
    // goes, is a figure of `make bench` (the `sessions` scenario), not a test: it depends on
    // when malloc returns memory (bench/README.md).
    @Test("a client opening 500 sessions keeps its 256 most recently used; others are served; its sessions go when it does")
    func hundredsOfSessions() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        #expect(try fixture.run(["secret-tool", "store", "--label=t", "fault", "sessions"], input: "still-here").status == 0)
        let hoarder = try Self.python(fixture, try Self.script(fixture, "hoarder.py", Self.sessionHoarder), log: "hoarder.out")
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

    /// Asks to unlock the locked login keyring 40 times without ever running the prompts.
    static let promptHoarder = #"""
        conn = open_dbus_connection(bus="SESSION")
        prompts, errors = [], []
        for _ in range(40):
            try:
                prompts.append(call(conn, SERVICE, "Unlock", "ao", ([LOGIN],))[1])
            except RuntimeError as error:
                errors.append(str(error))
        print(json.dumps({"prompts": len(prompts), "errors": errors}), flush=True)
        time.sleep(600)
        """#

    @Test("a client may have 32 prompts waiting; more are refused with LimitsExceeded, and they go when it does")
    func promptLimit() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '\(Self.login)'],)")
        let hoarder = try Self.python(fixture, try Self.script(fixture, "prompts.py", Self.promptHoarder), log: "prompts.out")
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

    /// Sends calls as fast as it can for a number of seconds: `reading` reads the replies on
    /// another thread, `deaf` never reads them, `silent` flags them NO_REPLY_EXPECTED.
    static let flooder = #"""
        import threading
        from collections import Counter
        mode, seconds = sys.argv[1], float(sys.argv[2])
        conn = open_dbus_connection(bus="SESSION")
        messages = [
            new_method_call(SERVICE, "SearchItems", "a{ss}", ({"flood": "x"},)),
            new_method_call(address(ROOT, "org.freedesktop.DBus.Properties"), "Get", "ss",
                            ("org.freedesktop.Secret.Service", "Collections")),
            new_method_call(address(LOGIN, "org.freedesktop.DBus.Introspectable"), "Introspect"),
            new_method_call(SERVICE, "ReadAlias", "s", ("default",)),
        ]
        if mode == "silent":
            for message in messages:
                message.header.flags |= MessageFlag.no_reply_expected
        outcomes = Counter()
        def read():
            while True:
                try:
                    reply = conn.receive()
                except Exception:
                    return
                outcomes[reply.header.fields.get(HeaderFields.error_name, "reply")] += 1
        if mode == "reading":
            threading.Thread(target=read, daemon=True).start()
        sent, end = 0, time.time() + seconds
        while time.time() < end:
            conn.send(messages[sent % len(messages)])
            sent += 1
        time.sleep(1)
        print(json.dumps({"mode": mode, "sent": sent, "outcomes": dict(outcomes)}), flush=True)
        """#

    /// An ordinary client meanwhile: stores, searches and reads, recording each operation's
    /// latency; a call unanswered after 60 s is a failure.
    static let victim = #"""
        seconds = float(sys.argv[1])
        conn = open_dbus_connection(bus="SESSION")
        session = call(conn, SERVICE, "OpenSession", "sv", ("plain", ("s", "")))[1]
        collection = address(LOGIN, "org.freedesktop.Secret.Collection")
        latencies, failures, end, n = [], [], time.time() + seconds, 0
        while time.time() < end:
            n += 1
            started = time.time()
            try:
                value = ("victim-%d" % n).encode()
                properties = {"org.freedesktop.Secret.Item.Label": ("s", "victim"),
                              "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"victim": str(n % 5)})}
                path = call(conn, collection, "CreateItem", "a{sv}(oayays)b",
                            (properties, (session, b"", value, "text/plain"), True))[0]
                found = call(conn, SERVICE, "SearchItems", "a{ss}", ({"victim": str(n % 5)},))[0]
                secret = call(conn, address(path, "org.freedesktop.Secret.Item"), "GetSecret", "o", (session,))[0][2]
                if found != [path] or secret != value:
                    failures.append("operation %d read back %r %r" % (n, found, secret))
            except Exception as error:
                failures.append("operation %d: %s: %s" % (n, type(error).__name__, error))
            latencies.append(time.time() - started)
            time.sleep(0.05)
        latencies.sort()
        print(json.dumps({"operations": n, "failures": failures[:10],
                          "median_ms": round(1000 * latencies[len(latencies) // 2]),
                          "p95_ms": round(1000 * latencies[int(len(latencies) * 0.95)]),
                          "max_ms": round(1000 * latencies[-1])}), flush=True)
        """#

    // secretd's memory under the flood, at its peak and after, is a figure of `make bench`
    // (the `flood` scenario), not a test: it depends on when malloc returns memory.
    @Test("flooding clients (reading, not reading, or expecting no replies) on a session-sized bus: others are served, the call quota engages")
    func flood() throws {
        let seconds = Double(ProcessInfo.processInfo.environment["FAULT_FLOOD_SECONDS"] ?? "") ?? 10
        let fixture = try SecretdFixture()
        fixture.environment["G_SLICE"] = "always-malloc"  // as the systemd unit runs it
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let flooder = try Self.script(fixture, "flooder.py", Self.flooder)
        let flooders = try ["reading", "deaf", "silent"].map {
            try Self.python(fixture, flooder, [$0, String(seconds)], log: "flood-\($0).out")
        }
        let victim = try Self.python(fixture, try Self.script(fixture, "victim.py", Self.victim), [String(seconds)], log: "victim.out")
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
}
