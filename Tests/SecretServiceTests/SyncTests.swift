import Foundation
import Glibc
import Synchronization
import KeychainCore
import KeychainTestSupport
import SecretCrypto
import Testing

@testable import SecretStore
@testable import SecretSync

/// Sync between three machines: three secretd, each with its own data directory and bus, and a
/// bare git repository on a local path, driven as a person would, with secretctl (and
/// secret-tool reading the result). Joining needs the approval of a device of the vault and the
/// code both show; items created, changed and deleted on each reach the others; the same item
/// changed on two machines before either syncs converges to one winner everywhere, with the
/// loser in history (and restorable); device-only items stay home; a tampered or replayed file is refused
/// and changes nothing; a removed device cannot read what is written after its removal; a
/// locked keyring does not sync; and the repository holds no label, attribute value or secret.
@Suite(.serialized) struct SyncTests: SecretServiceCalls {
    /// One machine: its secretd and what it runs.
    final class Machine: @unchecked Sendable {
        let fixture: SecretdFixture
        var daemon: SupervisedProcess

        /// A machine whose rounds run every `interval` seconds (by default only when asked for,
        /// and after changes, so the test decides the order).
        init(interval: Int = 3600, environment: [String: String] = [:]) throws {
            fixture = try SecretdFixture()
            fixture.environment.merge(environment) { $1 }
            try fixture.writeConfiguration("sync-interval = \(interval)\n")
            daemon = try fixture.start()
        }

        /// Waits up to 20 s for `service account` to read `secret` (nil: to be gone).
        func waitFor(_ service: String, _ account: String, _ secret: String?) throws -> Bool {
            for _ in 0..<100 {
                if try get(service, account) == secret { return true }
                usleep(200_000)
            }
            return false
        }

        deinit { daemon.stop() }

        @discardableResult
        func secretctl(_ arguments: [String], input: String? = nil, expect status: Int32? = 0, sourceLocation: SourceLocation = #_sourceLocation)
            throws -> CommandResult
        {
            let result = try fixture.run([SecretdFixture.secretctlPath] + arguments, input: input)
            if let status {
                #expect(result.status == status, "secretctl \(arguments.joined(separator: " ")): \(result.errorOutput)", sourceLocation: sourceLocation)
            }
            return result
        }

        func get(_ service: String, _ account: String) throws -> String? {
            let result = try secretctl(["get", service, account], expect: nil)
            return result.status == 0 ? result.text : nil
        }

        func syncNow(sourceLocation: SourceLocation = #_sourceLocation) throws {
            try secretctl(["sync", "now"], sourceLocation: sourceLocation)
        }

        func status() throws -> [String: Any] {
            let text = try secretctl(["sync", "status", "--json"]).text
            return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        }
    }

    /// A bare repository on a local path, the remote of every machine.
    static func bareRemote(in machine: Machine) throws -> String {
        let path = machine.fixture.root.appendingPathComponent("remote.git").path
        #expect(try machine.fixture.run(["git", "init", "--quiet", "--bare", "--initial-branch", "main", path]).status == 0)
        return path
    }

    /// `joiner` asks to join and `member` approves it with the code it shows.
    static func join(_ joiner: Machine, approvedBy member: Machine, remote: String) throws {
        let asked = try joiner.secretctl(["sync", "join", remote]).text
        let device = try #require(asked.split(separator: " ").first { $0.count == 33 && $0.hasSuffix(";") }.map { String($0.dropLast()) }, "\(asked)")
        let status = try joiner.status()
        #expect(status["waiting_for_approval"] as? Bool == true)
        let code = try #require(status["code"] as? String)
        #expect(asked.contains("Its code is \(code)."))
        // The member sees the request with the same code.
        let pending = try #require(try member.status()["pending"] as? [[String: String]])
        #expect(pending.contains { $0["device"] == device && $0["code"] == code }, "\(pending)")
        // A wrong code approves nothing.
        let wrong = try member.secretctl(["sync", "approve", device, "--code", "000-000"], expect: nil)
        #expect(wrong.status == 6 && wrong.errorOutput.contains("shows another code"), "\(wrong.errorOutput)")
        try member.secretctl(["sync", "approve", device, "--code", code])
        try joiner.syncNow()
        #expect(try joiner.status()["waiting_for_approval"] as? Bool == false)
    }

    @Test("three machines: join with approval, changes everywhere, conflicts with history, device-only, tampering, removal, no plaintext in the remote")
    func threeMachines() throws {
        let (a, b, c) = (try Machine(), try Machine(), try Machine())
        let remote = try Self.bareRemote(in: a)

        try a.secretctl(["set", "com.example.mail", "alice", "--label", "Mail of Alice"], input: "first-secret")
        try a.secretctl(["set", "com.example.device", "local", "--accessible", "when-unlocked-device-only"], input: "device-only-secret")
        #expect(try a.secretctl(["sync", "init", remote]).text.contains("syncs with \(remote)"))
        let again = try a.secretctl(["sync", "init", remote], expect: nil)
        #expect(again.status != 0 && again.errorOutput.contains("already"), "\(again.errorOutput)")

        // B and C join; each brings its own item.
        try b.secretctl(["set", "com.example.vpn", "bob"], input: "vpn-secret")
        try Self.join(b, approvedBy: a, remote: remote)
        try Self.join(c, approvedBy: b, remote: remote)
        try a.syncNow()
        for machine in [a, b, c] {
            #expect(try machine.get("com.example.mail", "alice") == "first-secret")
            #expect(try machine.get("com.example.vpn", "bob") == "vpn-secret")
        }
        // secret-tool reads a synced item like any other.
        let looked = try c.fixture.run(["secret-tool", "lookup", "service", "com.example.mail", "account", "alice"])
        #expect(looked.text == "first-secret")
        // Device-only items stay home.
        #expect(try b.get("com.example.device", "local") == nil)
        #expect(try a.get("com.example.device", "local") == "device-only-secret")
        let devices = try #require(try a.status()["devices"] as? [String])
        #expect(devices.count == 3)
        // The item files as they are now, to be put back later (a replay).
        let early = a.fixture.root.appendingPathComponent("early").path
        #expect(try a.fixture.run(["git", "clone", "--quiet", remote, early]).status == 0)

        // A change on B and a delete on C reach the others.
        try b.secretctl(["set", "com.example.mail", "alice"], input: "second-secret")
        try b.syncNow()
        try c.secretctl(["delete", "com.example.vpn", "bob"])
        try c.syncNow()
        try a.syncNow()
        try b.syncNow()
        for machine in [a, b, c] {
            #expect(try machine.get("com.example.mail", "alice") == "second-secret")
            #expect(try machine.get("com.example.vpn", "bob") == nil)
        }
        // The item deleted elsewhere is in A's history, and comes back from it everywhere.
        let deletedHistory = try a.secretctl(["history", "com.example.vpn", "bob"]).text
        let deletedVersion = try #require(deletedHistory.split(separator: "\n").last?.split(separator: "\t").first, "\(deletedHistory)")
        try a.secretctl(["history", "com.example.vpn", "bob", "--restore", String(deletedVersion)])
        #expect(try a.get("com.example.vpn", "bob") == "vpn-secret")
        try a.syncNow()
        try c.syncNow()
        #expect(try c.get("com.example.vpn", "bob") == "vpn-secret")
        try c.secretctl(["delete", "com.example.vpn", "bob"])
        try c.syncNow()
        try a.syncNow()
        try b.syncNow()

        // The same item changed on A and on C before either syncs: the later edit (C's) wins
        // everywhere; A keeps its own edit in history, C the one it refused.
        try a.secretctl(["set", "com.example.mail", "alice", "--label", "edited on A"], input: "a-edit")
        usleep(20_000)
        try c.secretctl(["set", "com.example.mail", "alice", "--label", "edited on C"], input: "c-edit")
        try a.syncNow()
        try c.syncNow()
        try a.syncNow()
        try b.syncNow()
        for machine in [a, b, c] { #expect(try machine.get("com.example.mail", "alice") == "c-edit") }
        let historyOfA = try a.secretctl(["history", "com.example.mail", "alice"]).text
        #expect(historyOfA.contains("edited on A"), "\(historyOfA)")
        let historyOfC = try c.secretctl(["history", "com.example.mail", "alice", "--json"]).text
        #expect(historyOfC.contains("\"label\":\"edited on A\""), "\(historyOfC)")
        // The conflict was C's to resolve (its unsent edit met A's); B only took the winner.
        #expect((try c.status()["conflicts_resolved"] as? Int ?? 0) == 1)
        #expect((try b.status()["conflicts_resolved"] as? Int ?? 0) == 0)
        // Restoring A's edit there is a new change, which wins everywhere.
        let number = try #require(historyOfA.split(separator: "\n").last { $0.contains("edited on A") }?.split(separator: "\t").first)
        try a.secretctl(["history", "com.example.mail", "alice", "--restore", String(number)])
        #expect(try a.get("com.example.mail", "alice") == "a-edit")
        try a.syncNow()
        try b.syncNow()
        #expect(try b.get("com.example.mail", "alice") == "a-edit")

        // A file altered in the remote is refused by the next machine, which changes nothing.
        // A and C are held still meanwhile: a round either runs by itself (2 s after its last
        // change) would put its versions back first on a slow machine, and B would find nothing
        // altered.
        let others = [try #require(a.daemon.helperPID), try #require(c.daemon.helperPID)]
        for pid in others { kill(pid, SIGSTOP) }
        let other = a.fixture.root.appendingPathComponent("tamper").path
        #expect(try a.fixture.run(["git", "clone", "--quiet", remote, other]).status == 0)
        let items = try FileManager.default.contentsOfDirectory(atPath: other + "/items")
        #expect(!items.isEmpty)
        for name in items {
            var bytes = try Data(contentsOf: URL(fileURLWithPath: other + "/items/" + name))
            bytes[bytes.count - 1] ^= 1
            try bytes.write(to: URL(fileURLWithPath: other + "/items/" + name))
        }
        let commit = try a.fixture.run([
            "git", "-C", other, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "--quiet", "-am", "tamper",
        ])
        #expect(commit.status == 0, "\(commit.errorOutput)")
        #expect(try a.fixture.run(["git", "-C", other, "push", "--quiet", "origin", "HEAD:main"]).status == 0)
        let refused = try b.secretctl(["sync", "now"]).text
        for pid in others { kill(pid, SIGCONT) }
        // Refused by this round, or by one B ran by itself since the push (on a slow machine,
        // the round its own last change scheduled); then this one has nothing new.
        let refusedByItself = b.daemon.log.split(separator: "\n").contains { $0.contains("refused a file") && $0.contains("altered") }
        #expect((refused.contains("refused:") && refused.contains("altered")) || refusedByItself, "\(refused) \(b.daemon.log.suffix(1500))")
        #expect(try b.get("com.example.mail", "alice") == "a-edit")
        // ... and the machines put their versions back.
        try a.syncNow()
        try c.syncNow()
        #expect(try c.get("com.example.mail", "alice") == "a-edit")

        // Old versions put back by the remote (a replay) are refused too.
        #expect(try a.fixture.run(["git", "-C", other, "pull", "--quiet", "origin", "main"]).status == 0)
        for name in try FileManager.default.contentsOfDirectory(atPath: early + "/items") {
            try FileManager.default.removeItem(atPath: other + "/items/" + name)
            try FileManager.default.copyItem(atPath: early + "/items/" + name, toPath: other + "/items/" + name)
        }
        #expect(try a.fixture.run(["git", "-C", other, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "--quiet", "-am", "replay"]).status == 0)
        #expect(try a.fixture.run(["git", "-C", other, "push", "--quiet", "origin", "HEAD:main"]).status == 0)
        let replayed = try b.secretctl(["sync", "now"]).text
        #expect(replayed.contains("replayed"), "\(replayed)")
        #expect(try b.get("com.example.mail", "alice") == "a-edit")
        try a.syncNow()

        // A locked keyring does not sync.
        try b.secretctl(["lock"])
        let locked = try b.secretctl(["sync", "now"], expect: nil)
        #expect(locked.status != 0 && locked.errorOutput.contains("locked"), "\(locked.errorOutput)")
        try b.secretctl(["unlock", "--password-stdin"], input: "login-password")

        // C is removed: what is written after cannot be read there.
        let cDevice = try #require(try c.status()["device"] as? String)
        try a.secretctl(["sync", "remove", cDevice])
        try a.secretctl(["set", "com.example.new", "after"], input: "after-removal")
        try a.syncNow()
        let afterRemoval = try c.secretctl(["sync", "now"], expect: nil)
        #expect(try c.get("com.example.new", "after") == nil)
        #expect(afterRemoval.status != 0 && afterRemoval.errorOutput.contains("removed from the vault"), "\(afterRemoval.errorOutput)")
        try b.syncNow()
        #expect(try b.get("com.example.new", "after") == "after-removal")

        // The repository holds no label, attribute value or secret of any item.
        let objects = try a.fixture.run(["git", "-C", remote, "cat-file", "--batch-all-objects", "--batch"])
        #expect(objects.status == 0 && objects.output.count > 1000)
        for plain in [
            "first-secret", "second-secret", "a-edit", "c-edit", "vpn-secret", "after-removal", "device-only-secret", "Mail of Alice",
            "edited on", "com.example", "alice", "bob",
        ] {
            #expect(objects.output.range(of: Data(plain.utf8)) == nil, "the remote holds \(plain)")
        }
        for machine in [a, b, c] {
            #expect(!machine.daemon.log.contains("secret\"") && !machine.daemon.log.contains("first-secret"))
        }
    }

    @Test("in the background: a change syncs by itself; one made just before a stop syncs after the restart")
    func background() throws {
        let (a, b) = (try Machine(interval: 1), try Machine(interval: 1))
        let remote = try Self.bareRemote(in: a)
        try a.secretctl(["sync", "init", remote])
        try Self.join(b, approvedBy: a, remote: remote)
        try a.secretctl(["set", "com.example.background", "one"], input: "made-on-a")
        #expect(try b.waitFor("com.example.background", "one", "made-on-a"))
        try b.secretctl(["set", "com.example.background", "one"], input: "changed-on-b")
        #expect(try a.waitFor("com.example.background", "one", "changed-on-b"))
        // Edits one after the other are no conflicts.
        #expect(try a.status()["conflicts_resolved"] as? Int == 0)
        #expect(try b.status()["conflicts_resolved"] as? Int == 0)

        // A change, then at once a stop (before its round): it is kept, and published after
        // the restart and unlock.
        try a.secretctl(["set", "com.example.background", "two"], input: "before-the-stop")
        a.daemon.stop()
        #expect(try a.fixture.run(["git", "-C", remote, "log", "--oneline"]).text.split(separator: "\n").count >= 3)
        a.daemon = try a.fixture.start()
        #expect(try b.waitFor("com.example.background", "two", "before-the-stop"))
        #expect(try a.status()["unpublished_changes"] as? Int == 0)
    }

    @Test("a machine that joins with items of its own: the same attributes are the same item (the later version wins, the other is history); the rest goes out")
    func joinWithOwnItems() throws {
        let (a, b) = (try Machine(), try Machine())
        let remote = try Self.bareRemote(in: a)
        try a.secretctl(["set", "com.example.twin", "shared"], input: "older-on-a")
        try a.secretctl(["sync", "init", remote])
        sleep(1)  // the items' modified times are in seconds
        try b.secretctl(["set", "com.example.twin", "shared"], input: "newer-on-b")
        try b.secretctl(["set", "com.example.only-b", "mine"], input: "b-only")
        try Self.join(b, approvedBy: a, remote: remote)
        try b.syncNow()
        try a.syncNow()
        for machine in [a, b] {
            #expect(try machine.get("com.example.twin", "shared") == "newer-on-b")
            #expect(try machine.get("com.example.only-b", "mine") == "b-only")
            let found = try machine.fixture.run(["secret-tool", "search", "--all", "service", "com.example.twin"])
            #expect(found.text.split(separator: "\n").filter { $0.hasPrefix("[") }.count == 1, "\(found.text)")
            let history = try machine.secretctl(["history", "com.example.twin", "shared"]).text
            #expect(history.split(separator: "\n").count == 1, "\(history)")
        }
    }

    @Test("a remote that never answers: git is stopped after its timeout with a clear error, and secretd answers meanwhile")
    func silentRemote() throws {
        // ssh that connects (and says so in a file) and never answers; one git command may take 3 s here.
        let connected = FileManager.default.temporaryDirectory.appendingPathComponent("ssh-connected-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: connected) }
        let a = try Machine(environment: ["GIT_SSH_COMMAND": "sh -c ': > \(connected.path); exec sleep 600' ssh", "SECRETD_TEST_GIT_TIMEOUT": "3"])
        try a.secretctl(["set", "com.example.meanwhile", "one"], input: "still-answers")
        let started = Date()
        let result = Mutex<CommandResult?>(nil)
        let thread = Thread {
            let outcome = try? a.secretctl(["sync", "init", "ssh://sync.example/vault.git"], expect: nil)
            result.withLock { $0 = outcome }
        }
        thread.start()
        while !FileManager.default.fileExists(atPath: connected.path) && result.withLock({ $0 }) == nil { usleep(20_000) }
        // While the round waits for git, every other call is answered.
        #expect(try a.get("com.example.meanwhile", "one") == "still-answers")
        #expect(result.withLock { $0 } == nil, "sync init returned before git's timeout")
        while result.withLock({ $0 }) == nil && Date().timeIntervalSince(started) < 30 { usleep(100_000) }
        let failed = try #require(result.withLock { $0 })
        #expect(failed.status != 0 && failed.errorOutput.contains("did not finish within 3 s"), "\(failed.errorOutput)")
        // Nothing was started: the keyring can still start syncing, once the remote answers.
        let status = try a.secretctl(["sync", "status"], expect: nil)
        #expect(status.errorOutput.contains("does not sync"), "\(status.errorOutput)")
    }

    @Test("a round already on its thread when the store is restored writes nothing of the state the restore replaced; the next round syncs")
    func roundAcrossRestore() throws {
        // git reaches the remote through an "ssh" that waits while the gate file exists (and says so).
        let gate = FileManager.default.temporaryDirectory.appendingPathComponent("sync-gate-\(UUID().uuidString)")
        let waiting = gate.path + "-waiting"
        defer { try? FileManager.default.removeItem(at: gate); try? FileManager.default.removeItem(atPath: waiting) }
        let ssh = "sh -c 'while [ -e \(gate.path) ]; do : > \(waiting); sleep 0.05; done; for last; do :; done; exec sh -c \"$last\"' ssh"
        let a = try Machine(environment: ["GIT_SSH_COMMAND": ssh])
        let remote = try Self.bareRemote(in: a)
        try a.secretctl(["set", "com.example.restore", "one"], input: "in-the-backup")
        try a.secretctl(["sync", "init", "ssh://sync.example\(remote)"])
        try a.syncNow()
        let backup = a.fixture.root.appendingPathComponent("before.sqlite3").path
        try a.secretctl(["backup", backup])

        // A change after the backup; its round (2 s later) holds at the gate.
        #expect(FileManager.default.createFile(atPath: gate.path, contents: nil))
        try a.secretctl(["set", "com.example.restore", "one"], input: "after-the-backup")
        var held = false
        for _ in 0..<200 where !held {
            usleep(50_000)
            held = FileManager.default.fileExists(atPath: waiting)
        }
        try #require(held, "no round reached the remote")
        try a.secretctl(["restore", backup])
        try a.secretctl(["unlock", "--password-stdin"], input: "login-password")
        #expect(try a.get("com.example.restore", "one") == "in-the-backup")

        // The round ends: it writes nothing (its item ids and state are the replaced store's).
        try FileManager.default.removeItem(at: gate)
        #expect(a.daemon.logs("ended after a restore: nothing it brought is written"), "\(a.daemon.log)")
        #expect(try a.get("com.example.restore", "one") == "in-the-backup")
        // The next round takes from the remote what that one published, as from any machine.
        try a.syncNow()
        #expect(try a.get("com.example.restore", "one") == "after-the-backup", "\(a.daemon.log)")
        #expect(try a.status()["unpublished_changes"] as? Int == 0)
    }

    @Test("the sync state per item: a round writes the entries it changed and no other; a state from before moves into entries with nothing published again")
    func stateInRows() throws {
        let a = try Machine()
        let remote = try Self.bareRemote(in: a)
        for account in ["one", "two", "three"] { try a.secretctl(["set", "com.example.rows", account], input: "secret-\(account)") }
        try a.secretctl(["sync", "init", remote])
        try a.syncNow()
        let file = a.fixture.dataDirectory.appendingPathComponent(Store.fileName).path
        /// The sealed entries, by name, as the database holds them now.
        func entries() throws -> [String: [UInt8]] {
            let database = try Database(path: file)
            var found: [String: [UInt8]] = [:]
            for row in try database.rows("SELECT name, sealed FROM sync_entries") {
                if let name = row[0].text, let sealed = row[1].blob { found[name] = sealed }
            }
            return found
        }
        let first = try entries()
        #expect(first.count == 3)

        // One change: its entry is sealed again, the others are left as they were.
        try a.secretctl(["set", "com.example.rows", "two"], input: "changed")
        try a.syncNow()
        let second = try entries()
        #expect(second.count == 3 && Set(second.keys) == Set(first.keys))
        #expect(second.filter { first[$0.key] != $0.value }.count == 1)
        // An idle round writes none.
        try a.syncNow()
        #expect(try entries() == second)

        // The state as a secretd from before kept it: one sealed whole, no entries.
        a.daemon.stop()
        let commits = try a.fixture.run(["git", "-C", remote, "rev-list", "--count", "main"]).text
        do {
            let store = try Store(directory: a.fixture.dataDirectory)
            defer { store.close() }
            let login = try #require(try store.collections().first { $0.name == "login" })
            let keys = try store.unlock(login, password: SecureBytes(Array("login-password".utf8)))
            let stored = try #require(try store.syncState(of: login, keys: keys))
            var vault = try SyncVault(decoding: stored.state, wallClock: { 0 })
            for (name, entry) in stored.entries { try vault.takeEntry(name, entry) }
            let remoteURL = try #require(try store.syncSettings(of: login)).remote
            try store.saveSyncState(vault.encoded(withEntries: true), entries: stored.entries.mapValues { _ in nil }, remote: remoteURL,
                                    of: login, keys: keys)
        }
        #expect(try entries().isEmpty)
        a.daemon = try a.fixture.start()
        let round = try a.secretctl(["sync", "now"]).text
        #expect(try entries().count == 3, "\(round)")
        #expect(try a.fixture.run(["git", "-C", remote, "rev-list", "--count", "main"]).text == commits, "published again: \(round)")
        for (account, secret) in [("one", "secret-one"), ("two", "changed"), ("three", "secret-three")] {
            #expect(try a.get("com.example.rows", account) == secret)
        }
        // And the next change goes out as before.
        try a.secretctl(["set", "com.example.rows", "three"], input: "changed too")
        try a.syncNow()
        let b = try Machine()
        try Self.join(b, approvedBy: a, remote: remote)
        #expect(try b.get("com.example.rows", "three") == "changed too")
        #expect(try b.get("com.example.rows", "two") == "changed")
    }

    @Test("a keyring deleted while it starts to sync: sync init fails with a clear error and secretd keeps serving")
    func deletedWhileStarting() throws {
        // ssh that says it connected, waits 2 s, then serves the local remote (git's "simple" ssh: host, command).
        let connected = FileManager.default.temporaryDirectory.appendingPathComponent("ssh-connected-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: connected) }
        let a = try Machine(environment: [
            "GIT_SSH_VARIANT": "simple", "GIT_SSH_COMMAND": "sh -c ': > \(connected.path); sleep 2; eval \"$2\"' ssh",
        ])
        try a.secretctl(["set", "com.example.work", "one"], input: "kept", expect: 0)
        let opened = try a.fixture.call(SecretServiceNames.Path.service, SecretServiceNames.Interface.service, "OpenSession", "('plain', <''>)")
        let session = try #require(objectPaths(in: opened).first)
        try a.fixture.call(SecretServiceNames.Path.service, SecretServiceNames.Interface.gnomeExtension, "CreateWithMasterPassword",
                           "({'org.freedesktop.Secret.Collection.Label': <'Doomed'>}, (objectpath '\(session)', @ay [], b'pw', 'text/plain'))")
        let remote = try Self.bareRemote(in: a)
        let result = Mutex<CommandResult?>(nil)
        let thread = Thread {
            let outcome = try? a.secretctl(["sync", "init", "ssh://sync.example\(remote)", "--collection", "doomed"], expect: nil)
            result.withLock { $0 = outcome }
        }
        thread.start()
        while !FileManager.default.fileExists(atPath: connected.path) && result.withLock({ $0 }) == nil { usleep(20_000) }
        #expect(result.withLock { $0 } == nil, "sync init returned before the remote answered")
        try a.fixture.call(SecretServiceNames.Path.collection("doomed"), SecretServiceNames.Interface.collection, "Delete")
        while result.withLock({ $0 }) == nil { usleep(100_000) }
        let failed = try #require(result.withLock { $0 })
        #expect(failed.status != 0 && failed.errorOutput.contains("deleted meanwhile"), "\(failed.errorOutput)")
        // secretd is still there, with the other keyring's items.
        #expect(a.daemon.isRunning)
        #expect(try a.get("com.example.work", "one") == "kept")
    }

    @Test("clear errors: no remote, an unreachable remote, a keyring that does not sync, the session keyring, bad input")
    func errors() throws {
        let a = try Machine()
        let notSyncing = try a.secretctl(["sync", "status"], expect: nil)
        #expect(notSyncing.status != 0 && notSyncing.errorOutput.contains("does not sync"), "\(notSyncing.errorOutput)")
        let missing = try a.secretctl(["sync", "init"], expect: nil)
        #expect(missing.status == 2, "\(missing.errorOutput)")
        let nowhere = try a.secretctl(["sync", "init", a.fixture.root.appendingPathComponent("no-such-repo").path], expect: nil)
        #expect(nowhere.status != 0 && nowhere.errorOutput.contains("git"), "\(nowhere.errorOutput)")
        let session = try a.secretctl(["sync", "init", "/tmp/x", "--collection", "session"], expect: nil)
        #expect(session.status != 0 && session.errorOutput.contains("never leaves"), "\(session.errorOutput)")
        let joinEmpty = try a.secretctl(["sync", "join", try Self.bareRemote(in: a)], expect: nil)
        #expect(joinEmpty.status != 0 && joinEmpty.errorOutput.contains("no vault"), "\(joinEmpty.errorOutput)")
        // After failures the keyring can still start syncing.
        let remote = a.fixture.root.appendingPathComponent("remote.git").path
        try a.secretctl(["sync", "init", remote])
        try a.syncNow()
        let history = try a.secretctl(["history", "com.example.none", "nobody"], expect: nil)
        #expect(history.status != 0 && history.errorOutput.contains("no such item"), "\(history.errorOutput)")
        try a.secretctl(["sync", "leave"])
        #expect(try a.secretctl(["sync", "status"], expect: nil).status != 0)
        // A remote that holds a vault already is joined, not started again.
        let taken = try a.secretctl(["sync", "init", remote], expect: nil)
        #expect(taken.status != 0 && taken.errorOutput.contains("join it instead"), "\(taken.errorOutput)")
    }
}
