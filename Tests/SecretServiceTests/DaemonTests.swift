import Foundation
import KeychainTestSupport
import Testing

@testable import SecretStore

/// secretd itself: start-up, the bus name, restarts, crashes, passwords and bad input.
/// Each test has its own private bus and data directory.
@Suite struct DaemonTests: SecretServiceCalls {
    static let gnome = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"

    @Test("refuses with one clear line when another provider owns the name, and --replace takes it")
    func busName() throws {
        let fixture = try SecretdFixture()
        let first = try fixture.start()
        // The others keep data directories of their own: this is about the bus name alone.
        func ownDirectory(_ name: String) -> [String] { ["--data-dir", fixture.root.appendingPathComponent(name).path] }
        let second = try fixture.start(ownDirectory("second"), input: nil, waitForName: false)
        #expect(second.waitForExit(timeout: 20) == 1)
        let lines = second.log.split(separator: "\n").filter { !$0.hasPrefix("<") }
        #expect(lines.count == 1, "\(second.log)")
        #expect(lines.first?.contains("org.freedesktop.secrets is already owned by another provider") == true)
        #expect(lines.first?.contains("--replace") == true)
        #expect(first.isRunning)

        let third = try fixture.start(["--replace"] + ownDirectory("third"), input: nil, waitForName: false)
        #expect(first.waitForExit(timeout: 20) == 0, "the replaced daemon exits cleanly")
        #expect(first.log.contains("another provider took org.freedesktop.secrets"))
        #expect(third.isRunning)
        third.stop()
    }

    @Test("a second secretd on a data directory in use refuses with one line naming the first, which loses nothing; --replace stops it")
    func sharedDataDirectory() throws {
        let fixture = try SecretdFixture()
        let first = try fixture.start()
        let firstPID = try #require(first.helperPID)
        // A session-keyring item: the start of a second daemon on the same file deleted these.
        #expect(try fixture.run(["secret-tool", "store", "--collection=session", "--label=Build", "service", "ci", "account", "job"],
                                input: "token").status == 0)
        #expect(try fixture.run(["secret-tool", "store", "--label=Mail", "service", "mail", "account", "alice"], input: "s3cr3t").status == 0)

        // Another bus name stands for another bus (a script under dbus-run-session): the bus
        // would let it serve, the data directory must not.
        let second = try fixture.start(["--unlock", "--bus-name", "org.example.Second"], input: "login-password", waitForName: false)
        #expect(second.waitForExit(timeout: 20) == 1)
        let lines = second.log.split(separator: "\n").filter { !$0.hasPrefix("<") }
        #expect(lines.count == 1, "\(second.log)")
        #expect(lines.first?.contains("is in use by another secretd (pid \(firstPID))") == true, "\(second.log)")
        #expect(lines.first?.contains("--replace") == true)
        #expect(first.isRunning)
        #expect(try fixture.run(["secret-tool", "lookup", "service", "ci", "account", "job"]).text == "token")
        #expect(try fixture.run(["secret-tool", "store", "--collection=session", "--label=Build 2", "service", "ci", "account", "job2"],
                                input: "token2").status == 0)

        let third = try fixture.start(["--replace", "--bus-name", "org.example.Third"], input: nil, waitForName: false)
        #expect(first.waitForExit(timeout: 20) == 0, "the daemon asked to stop writes out its database and exits cleanly")
        try fixture.control.waitForOwner(of: "org.example.Third", startedBy: third)
        #expect(third.log.contains("taking over \(fixture.dataDirectory.path) from secretd pid \(firstPID)"), "\(third.log)")
        third.stop()
        // The login keyring is whole after the handover.
        let fourth = try fixture.start()
        #expect(try fixture.run(["secret-tool", "lookup", "service", "mail", "account", "alice"]).text == "s3cr3t")
        fourth.stop()
    }

    @Test("items survive a restart, stay locked until unlocked, and keep their paths")
    func restart() throws {
        let fixture = try SecretdFixture()
        var daemon = try fixture.start()
        var session = try openPlainSession(fixture)
        let path = try createItem(fixture, session, attributes: "{'service': 'mail', 'account': 'alice'}", value: "persisted")
        daemon.stop()
        try fixture.waitUntilNameIsFree()

        daemon = try fixture.start([], input: nil)
        #expect(try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "({'service': 'mail'},)")
                == "(@ao [], [objectpath '\(path)'])")
        session = try openPlainSession(fixture)
        #expect(refusal { try fixture.call(path, Self.itemInterface, "GetSecret", "(objectpath '\(session)',)") } == "org.freedesktop.Secret.Error.IsLocked")
        _ = try fixture.call(Self.service, Self.gnome, "UnlockWithMasterPassword",
                             "(objectpath '/org/freedesktop/secrets/collection/login', \(secret(session, "login-password")))")
        let reply = try fixture.call(path, Self.itemInterface, "GetSecret", "(objectpath '\(session)',)")
        #expect(reply.contains("[byte 0x70, 0x65, 0x72, 0x73, 0x69, 0x73, 0x74, 0x65, 0x64]"), "\(reply)")
        daemon.stop()
    }

    @Test("a clean stop leaves every item in the database file itself, no -wal or -shm file beside it, and its quick check's mark: the next start checks nothing, one after a crash does")
    func cleanStop() throws {
        let fixture = try SecretdFixture()
        var daemon = try fixture.start()
        let session = try openPlainSession(fixture)
        let path = try createItem(fixture, session, attributes: "{'service': 'mail'}", value: "folded")
        daemon.stop()
        try fixture.waitUntilNameIsFree()
        // A user who copies only secretd.sqlite3 (a backup, a move) must get every item.
        // Beside it only the empty lock file, which the kernel let go of when secretd ended,
        // and the mark of the quick check the stop made (CleanStopMark).
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.dataDirectory.path).sorted()
        #expect(files == [DataDirectoryLock.fileName, Store.fileName, Store.fileName + ".checked"].sorted(), "\(files)")
        let skipped = "passed its quick check at the last clean stop and is unchanged since"

        daemon = try fixture.start()
        #expect(daemon.log.contains(skipped), "\(daemon.log)")
        let fresh = try openPlainSession(fixture)
        let reply = try fixture.call(path, Self.itemInterface, "GetSecret", "(objectpath '\(fresh)',)")
        #expect(reply.contains("[byte 0x66, 0x6f, 0x6c, 0x64, 0x65, 0x64]"), "\(reply)")
        daemon.crash()
        try fixture.waitUntilNameIsFree()
        daemon = try fixture.start()
        #expect(!daemon.log.contains(skipped), "a start after a crash checks the file")
        daemon.stop()
    }

    @Test("the session keyring's items die with secretd: a clean stop deletes the keyring, a start after a crash deletes what is left")
    func sessionKeyringAcrossRestarts() throws {
        let fixture = try SecretdFixture()
        let sessionKeyring = "/org/freedesktop/secrets/collection/session"
        func storeInSessionKeyring(_ value: String) throws {
            let session = try openPlainSession(fixture)
            _ = try fixture.call(
                sessionKeyring, Self.collectionInterface, "CreateItem",
                "({'org.freedesktop.Secret.Item.Label': <'temporary'>, 'org.freedesktop.Secret.Item.Attributes': <{'kept': 'no'}>}, \(secret(session, value)), false)")
        }
        func sessionItems() throws -> String {
            try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "({'kept': 'no'},)")
        }
        var daemon = try fixture.start()
        try storeInSessionKeyring("until the stop")
        #expect(try sessionItems().contains("/collection/session/"))
        daemon.stop()
        try fixture.waitUntilNameIsFree()
        // Stopped cleanly: no session keyring in the file, so the next start has none to delete.
        let store = try Store(directory: fixture.dataDirectory)
        #expect(try store.collection(named: "session") == nil)
        #expect(try store.collection(named: "login") != nil)
        store.close()

        daemon = try fixture.start()
        #expect(try sessionItems() == "(@ao [], @ao [])")
        #expect(try fixture.call(Self.service, "org.freedesktop.DBus.Properties", "Get", "('org.freedesktop.Secret.Service', 'Collections')")
                .contains("'\(sessionKeyring)'"))
        try storeInSessionKeyring("until the crash")
        daemon.crash()
        try fixture.waitUntilNameIsFree()
        daemon = try fixture.start()
        #expect(try sessionItems() == "(@ao [], @ao [])")
        daemon.stop()
    }

    @Test("an item acknowledged over D-Bus survives kill -9 right after the reply")
    func durability() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        let session = try openPlainSession(fixture)
        let path = try createItem(fixture, session, attributes: "{'k': 'v'}", value: "durable")
        daemon.crash()
        try fixture.waitUntilNameIsFree()
        let restarted = try fixture.start()
        let fresh = try openPlainSession(fixture)
        let reply = try fixture.call(path, Self.itemInterface, "GetSecret", "(objectpath '\(fresh)',)")
        #expect(reply.contains("[byte 0x64, 0x75, 0x72, 0x61, 0x62, 0x6c, 0x65]"), "\(reply)")
        restarted.stop()
    }

    @Test("a wrong password is refused with a growing delay and changes nothing")
    func wrongPassword() throws {
        let fixture = try SecretdFixture()
        var daemon = try fixture.start()
        daemon.stop()
        try fixture.waitUntilNameIsFree()
        daemon = try fixture.start(["--unlock"], input: "not-the-password")
        #expect(daemon.log.contains("does not unlock the login keyring"))
        let session = try openPlainSession(fixture)
        let login = "objectpath '/org/freedesktop/secrets/collection/login'"
        do {
            _ = try fixture.call(Self.service, Self.gnome, "UnlockWithMasterPassword", "(\(login), \(secret(session, "wrong")))")
            Issue.record("a wrong password was accepted")
        } catch {
            #expect("\(error)".contains("org.gnome.keyring.Error.Denied"))
        }
        do {
            _ = try fixture.call(Self.service, Self.gnome, "UnlockWithMasterPassword", "(\(login), \(secret(session, "login-password")))")
            Issue.record("an attempt inside the delay was accepted")
        } catch {
            #expect("\(error)".contains("try again in"))
        }
        try fixture.passwordClock.advance(by: 1.01)  // the wait after one wrong password is 1 s
        _ = try fixture.call(Self.service, Self.gnome, "UnlockWithMasterPassword", "(\(login), \(secret(session, "login-password")))")
        #expect(try fixture.call("/org/freedesktop/secrets/collection/login", "org.freedesktop.DBus.Properties", "Get",
                                 "('org.freedesktop.Secret.Collection', 'Locked')") == "(<false>,)")
        daemon.stop()
    }

    @Test("secret-tool works end to end, and Lock makes reads fail cleanly")
    func secretTool() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        #expect(try fixture.run(["secret-tool", "store", "--label=Mail", "service", "mail", "account", "alice"], input: "s3cr3t").status == 0)
        #expect(try fixture.run(["secret-tool", "lookup", "service", "mail", "account", "alice"]).text == "s3cr3t")
        let search = try fixture.run(["secret-tool", "search", "--all", "service", "mail"])
        #expect((search.text + search.errorOutput).contains("attribute.account = alice"))
        // (`secret-tool lock` of libsecret 0.20.5 crashes after locking, with gnome-keyring too.)
        _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '/org/freedesktop/secrets/collection/login'],)")
        let locked = try fixture.run(["secret-tool", "lookup", "service", "mail", "account", "alice"])
        #expect(locked.status == 1 && locked.text.isEmpty)
        daemon.stop()
    }

    /// 64 KiB secrets are read, sealed and written off secretd's main loop, and the call behind
    /// waits for their answer.
    @Test("a read sent right behind a write on the same connection sees the write, as with gnome-keyring; small and large secrets",
          arguments: [0, 64 * 1024])
    func readBehindWrite(secretBytes: Int) throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let result = try fixture.runClient("pipelined.py", secretBytes > 0 ? [String(secretBytes)] : [])
        #expect(result.status == 0, "\(result.errorOutput)")
        #expect(result.text == "failures: [] 0\n", "\(result.errorOutput)")
        #expect(daemon.isRunning)
    }

    @Test("a client sending 8 MB ImportItems batches (2,000 items each) without waiting for the replies has at most 64 MiB of them waiting in secretd, though each is measured on the loop only up to 32 KiB: the calls past that are refused with LimitsExceeded, every other one is stored, and secretd goes on serving")
    func largeCallsPipelined() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let count = 32
        let result = try fixture.runClient("large-pipeliner.py", [String(count), "2000"])
        #expect(result.status == 0, "\(result.errorOutput)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.text.utf8)) as? [String: Any], "\(result.text)")
        print("large calls pipelined: \(report)")
        let stored = report["stored"] as? Int ?? -1, refused = report["refused"] as? Int ?? -1
        #expect(report["other"] as? [String] == [], "\(report)")
        #expect(stored + refused == count, "\(report)")
        // Counted by their first 32 KiB alone, all 32 would wait (a mutant that never measures
        // them whole stored 32 and refused none); 64 MiB holds 7 whole, besides the one counted
        // short and those handled meanwhile.
        #expect(refused > 0 && stored >= 8, "\(report)")
        #expect(daemon.log.contains("refused with LimitsExceeded"), "the call quota never came into play")
        #expect(try fixture.call(Self.service, Self.serviceInterface, "ReadAlias", "('default',)") == "(objectpath '\(Self.login)',)")
        #expect(daemon.isRunning)
    }

    @Test("ImportPackedItems batches and a search sent on one connection without waiting: secretd plans a batch while the one before is written, yet it ends as if they ran in turn: an item of two batches is made once, the later batch with replace wins, and the search right behind sees all")
    func batchesPipelined() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let result = try fixture.runClient("batch-pipeliner.py")
        #expect(result.status == 0, "\(result.errorOutput)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.text.utf8)) as? [String: Any], "\(result.text)")
        let answers = try #require(report["answers"] as? [String: Any], "\(report)")
        #expect(answers["A"] as? [Int] == [1000, 0, 0], "\(report)")
        #expect(answers["B"] as? [Int] == [500, 500, 0], "\(report)")
        #expect(answers["C"] as? [Int] == [1000, 0, 0], "\(report)")
        #expect(answers["search"] as? Int == 2500, "\(report)")
        #expect((report["order"] as? [String])?.last == "search", "\(report)")
        let copies = try #require(report["copies"] as? [String: Int], "\(report)")
        #expect(copies.count == 8 && copies.values.allSatisfy { $0 == 1 }, "\(report)")
        #expect(report["secrets"] as? [String: String] == [
            "0": "a 0", "499": "a 499", "500": "b 500", "999": "b 999", "1000": "b 1000", "1499": "b 1499", "2000": "c 2000", "2999": "c 2999",
        ], "\(report)")
        #expect(daemon.isRunning)
    }

    @Test("every write sends ItemCreated before its reply; the collection's Items, with the value, at once after a quiet spell, else gathered: a few lists for 100 writes, the last with every item")
    func itemsPerWrite() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let result = try fixture.runClient("items-per-write.py")
        #expect(result.status == 0, "\(result.errorOutput)")
        let batches = result.text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        try #require(batches.count == 2, "\(result.text)")
        let events = batches.map { $0["events"] as? String ?? "" }
        // Each reply comes after the ItemCreated of its write (signals held for a commit go
        // out before its replies).
        #expect(events[0].filter { $0 == "R" }.count == 100)
        #expect(events[0].filter { $0 == "C" }.count == 100)
        var created = 0, replies = 0
        for event in events[0] {
            if event == "C" { created += 1 }
            if event == "R" {
                replies += 1
                #expect(created >= replies, "reply \(replies) before its ItemCreated: \(events[0])")
            }
        }
        // Items: the first write's at once, the others' gathered (ItemsSchedule), not one per write.
        let lists = events[0].filter { $0 == "I" }.count
        #expect((1...6).contains(lists), "\(lists) Items lists for 100 writes: \(events[0])")
        #expect(events[0].first { $0 != "C" } == "I", "the first write's Items come before its reply: \(events[0])")
        #expect(batches[0]["last_items"] as? Int == 100, "\(batches[0])")
        // A rename between two writes: the Label at once, every write's ItemCreated before its reply.
        #expect(events[1].filter { $0 != "I" } == "CRLRCR", "\(events[1])")
        #expect(batches[1]["last_items"] as? Int == 102, "\(batches[1])")
    }

    @Test("stopped under a flood of writes, secretd still answers every write it committed")
    func repliesAtStop() throws {
        // A race: a secretd that exits before the bus has read its last replies, with calls of
        // its own still unread, loses them (dbus-daemon drops a connection reset that way without
        // reading the rest) and their callers get NoReply for stored writes. Three rounds of two
        // writers by default; STOP_REPLIES_ROUNDS, STOP_REPLIES_WRITERS and STOP_REPLIES_CALLS
        // (each writer's) make it a stress run, best beside CPU-bound loops.
        let environment = ProcessInfo.processInfo.environment
        let rounds = max(1, environment["STOP_REPLIES_ROUNDS"].flatMap(Int.init) ?? 3)
        let writers = max(1, environment["STOP_REPLIES_WRITERS"].flatMap(Int.init) ?? 2)
        let calls = max(2, environment["STOP_REPLIES_CALLS"].flatMap(Int.init) ?? 200)
        let fixture = try SecretdFixture()
        var totals = (writes: 0, replies: 0, stored: 0, lost: 0, unbacked: 0)
        for round in 1...rounds {
            let daemon = try fixture.start()
            let pid = try #require(daemon.helperPID)
            let result = try fixture.runClient("stop-under-writes.py", [String(pid), String(round), String(writers), String(calls)])
            #expect(result.status == 0, "\(result.errorOutput)")
            #expect(daemon.waitForExit(timeout: 90) == 0, "\(daemon.log)")
            try fixture.waitUntilNameIsFree()
            let counts = result.text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
            try #require(counts.count == 2, "\(result.text)")
            #expect(counts[0] + counts[1] == writers * calls)

            let restarted = try fixture.start()
            let found = try fixture.call(Self.service, Self.serviceInterface, "SearchItems", "({'stop': '\(round)'},)")
            restarted.stop()
            try fixture.waitUntilNameIsFree()
            // Every item that was stored was acknowledged, and every acknowledged one stored.
            // (GVariant text marks only the first path of an array with "objectpath".)
            let stored = found.components(separatedBy: "'/org/freedesktop/secrets/collection/login/").count - 1
            #expect(stored == counts[0], "round \(round): \(counts) against \(stored) items; errors: \(result.errorOutput); secretd's log: \(daemon.log)")
            totals.writes += writers * calls
            totals.replies += counts[0]
            totals.stored += stored
            totals.lost += max(0, stored - counts[0])
            totals.unbacked += max(0, counts[0] - stored)
        }
        print("repliesAtStop: \(rounds) rounds of \(writers) writers x \(calls) calls: \(totals.writes) writes, "
              + "\(totals.stored) stored, \(totals.replies) acknowledged; \(totals.lost) replies of stored writes lost, "
              + "\(totals.unbacked) acknowledged writes not stored")
    }

    @Test("aliases: default is login, served under /aliases/default; CreateCollection by alias is idempotent")
    func aliases() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        #expect(try fixture.call(Self.service, Self.serviceInterface, "ReadAlias", "('default',)")
                == "(objectpath '/org/freedesktop/secrets/collection/login',)")
        #expect(try fixture.call("/org/freedesktop/secrets/aliases/default", "org.freedesktop.DBus.Properties", "Get",
                                 "('org.freedesktop.Secret.Collection', 'Label')") == "(<'Login'>,)")
        #expect(try fixture.call(Self.service, Self.serviceInterface, "CreateCollection", "(@a{sv} {}, 'default')")
                == "(objectpath '/org/freedesktop/secrets/collection/login', objectpath '/')")
        #expect(try fixture.call(Self.service, Self.serviceInterface, "ReadAlias", "('nothing',)") == "(objectpath '/',)")
        daemon.stop()
    }

    @Test("a client's sessions are dropped when it disconnects")
    func sessionsDroppedOnDisconnect() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        var client: BusConnection? = try BusConnection(address: fixture.bus.address)
        let reply = try client!.call(Self.service, Self.serviceInterface, "OpenSession", "('plain', <''>)")
        let session = try #require(objectPaths(in: reply).first)
        let node = String(session.split(separator: "/").last!)
        func listed() throws -> Bool {
            try fixture.call("/org/freedesktop/secrets/session", "org.freedesktop.DBus.Introspectable", "Introspect")
                .contains("<node name=\"\(node)\"")
        }
        #expect(try listed())
        client = nil  // closes the connection
        var gone = false
        for _ in 0..<1000 where !gone {  // up to 20 s under load
            usleep(20_000)
            gone = try !listed()
        }
        #expect(gone)
        daemon.stop()
    }

    @Test("a systemd credential unlocks the login keyring without --unlock")
    func credential() throws {
        let fixture = try SecretdFixture()
        var daemon = try fixture.start()  // creates the login keyring with "login-password"
        daemon.stop()
        try fixture.waitUntilNameIsFree()
        let credentials = fixture.root.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        try "login-password\n".write(to: credentials.appendingPathComponent("login-password"), atomically: true, encoding: .utf8)
        fixture.environment["CREDENTIALS_DIRECTORY"] = credentials.path
        daemon = try fixture.start([], input: nil)
        #expect(try fixture.call("/org/freedesktop/secrets/collection/login", "org.freedesktop.DBus.Properties", "Get",
                                 "('org.freedesktop.Secret.Collection', 'Locked')") == "(<false>,)")
        daemon.stop()
    }

    @Test("the daemon runs with core dumps disabled")
    func noCoreDumps() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        let pid = try #require(daemon.helperPID)
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }
        #expect(core?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).first == "0", "\(core ?? "")")
        daemon.stop()
    }

    @Test("the daemon maps FoundationEssentials only: not libFoundation nor ICU (6.6 MiB of RSS)")
    func noFullFoundation() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let pid = try #require(daemon.helperPID)
        // Read to the end: /proc reports a size of 0, and a one-read load sees only the first page.
        let maps = try #require(try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(pid)/maps")).readToEnd())
        let libraries = Set(String(decoding: maps, as: UTF8.self).split(separator: "\n").compactMap { line in
            line.contains("/") ? line.split(separator: "/").last.map(String.init) : nil
        })
        #expect(libraries.contains("libFoundationEssentials.so"))
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"] {
            #expect(!libraries.contains(library), "secretd maps \(library)")
        }
    }

    @Test("started without G_SLICE, secretd starts itself again with it, and is still called secretd")
    func nameAfterRestart() throws {
        let fixture = try SecretdFixture()
        fixture.environment["G_SLICE"] = nil
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let pid = try #require(daemon.helperPID)
        let command = try String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)
        let environment = try #require(try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(pid)/environ")).readToEnd())
        #expect(command == "secretd\n")
        #expect(String(decoding: environment, as: UTF8.self).split(separator: "\0").contains("G_SLICE=always-malloc"))
    }

    @Test("an item's properties read right after a change show the change (secretd keeps the last item read)")
    func propertiesAfterChange() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let session = try openPlainSession(fixture)
        let item = try createItem(fixture, session, attributes: "{'k': 'v'}", value: "x")
        let other = try createItem(fixture, session, attributes: "{'k': 'w'}", value: "y")
        func all(_ path: String) throws -> String {
            try fixture.call(path, Self.properties, "GetAll", "('\(Self.itemInterface)',)")
        }
        #expect(try all(item).contains("'Label': <'test'>"))
        _ = try fixture.call(item, Self.properties, "Set", "('\(Self.itemInterface)', 'Label', <'renamed'>)")
        #expect(try all(item).contains("'Label': <'renamed'>"))
        _ = try fixture.call(item, Self.properties, "Set", "('\(Self.itemInterface)', 'Attributes', <{'k': 'changed'}>)")
        #expect(try fixture.call(item, Self.properties, "Get", "('\(Self.itemInterface)', 'Attributes')")
                == "(<{'k': 'changed'}>,)")
        // Another item in between, then the first again.
        #expect(try all(other).contains("{'k': 'w'}"))
        #expect(try all(item).contains("{'k': 'changed'}") && all(item).contains("'Label': <'renamed'>"))
        // Locked: nothing of what was read before shows.
        _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '\(Self.login)'],)")
        let locked = try all(item)
        #expect(locked.contains("'Label': <''>") && locked.contains("'Attributes': <@a{ss} {}>"), "\(locked)")
    }

    @Test("signals: item and collection created, changed, deleted; PropertiesChanged")
    func signals() throws {
        let fixture = try SecretdFixture()
        let daemon = try fixture.start()
        // Signals about items reach the clients that called secretd: this one, which makes the calls.
        let recorder = SignalRecorder(listeningOn: fixture.control)
        let session = try openPlainSession(fixture)
        let login = "/org/freedesktop/secrets/collection/login"
        let item = try createItem(fixture, session, attributes: "{'k': 'v'}", value: "x")
        #expect(recorder.wait(for: "ItemCreated", path: login)?.arguments == "(objectpath '\(item)',)")
        // The collection's Items, with the value (libsecret's lists load from it).
        #expect(recorder.wait(for: "PropertiesChanged", path: login, containing: "'Items': <[objectpath '\(item)']>") != nil)

        _ = try fixture.call(item, "org.freedesktop.DBus.Properties", "Set", "('\(Self.itemInterface)', 'Label', <'renamed'>)")
        #expect(recorder.wait(for: "ItemChanged", path: login)?.arguments == "(objectpath '\(item)',)")
        #expect(recorder.wait(for: "PropertiesChanged", path: item, containing: "'Label': <'renamed'>") != nil)
        #expect(try fixture.call(item, "org.freedesktop.DBus.Properties", "Get", "('\(Self.itemInterface)', 'Label')")
                == "(<'renamed'>,)")

        _ = try fixture.call(item, Self.itemInterface, "Delete")
        #expect(recorder.wait(for: "ItemDeleted", path: login)?.arguments == "(objectpath '\(item)',)")

        _ = try fixture.call(login, "org.freedesktop.DBus.Properties", "Set", "('\(Self.collectionInterface)', 'Label', <'Main'>)")
        #expect(recorder.wait(for: "CollectionChanged", path: Self.service)?.arguments == "(objectpath '\(login)',)")

        let created = try fixture.call(Self.service, Self.gnome, "CreateWithMasterPassword",
                                       "({'org.freedesktop.Secret.Collection.Label': <'Extra'>}, \(secret(session, "extra-pass")))")
        let extra = try #require(objectPaths(in: created).first)
        #expect(recorder.wait(for: "CollectionCreated", path: Self.service)?.arguments == "(objectpath '\(extra)',)")
        // Then the service's Collections, with the value (libsecret's list of keyrings loads from it).
        #expect(recorder.wait(for: "PropertiesChanged", path: Self.service, containing: "'\(extra)'") != nil)
        _ = try fixture.call(extra, Self.collectionInterface, "Delete")
        #expect(recorder.wait(for: "CollectionDeleted", path: Self.service)?.arguments == "(objectpath '\(extra)',)")

        recorder.clear()
        _ = try fixture.call(Self.service, Self.serviceInterface, "Lock", "([objectpath '\(login)'],)")
        #expect(recorder.wait(for: "PropertiesChanged", path: login, containing: "'Locked': <true>") != nil)
        daemon.stop()
    }

    @Test("--help, --version and bad options")
    func commandLine() throws {
        let fixture = try SecretdFixture()
        #expect(try fixture.run([SecretdFixture.secretdPath, "--version"]).text.hasPrefix("secretd "))
        let help = try fixture.run([SecretdFixture.secretdPath, "--help"])
        for option in ["--foreground", "--data-dir", "--config-dir", "--unlock", "--replace", "--version"] {
            #expect(help.text.contains(option))
        }
        let bad = try fixture.run([SecretdFixture.secretdPath, "--frobnicate"])
        #expect(bad.status == 2)
        #expect(bad.errorOutput == "secretd: unknown option '--frobnicate' (see secretd --help)\n")
    }
}
