import Foundation
import KeychainCore
import KeychainTestSupport
@testable import SecretCrypto
@testable import SecretStore
import Testing

/// Power cuts below the page cache, as file-system crash testers make them (record and replay):
/// secretd runs with `scripts/power-cut/io-record.c` preloaded, which records every write,
/// truncation, sync, creation and removal it makes in its data directory, while three writers
/// (`scripts/dbus-clients/power-cut-writer.py`) store, replace and delete, and append to the
/// same log each call they make and each reply they get. secretd is stopped, killed and
/// started again between phases. Then, at cut points along the recording, states are rebuilt
/// as a power cut there can leave the disk (``CrashStates``: what was synced, and any part of
/// what was not, with torn writes) and each is checked: the store opens (SQLite's quick_check
/// and recovery), `PRAGMA integrity_check` is ok, every write acknowledged before the cut is
/// there with its exact secret (read through the login keyring's master key, derived once),
/// no item is there twice, and the attribute index finds each item and only live ones.
///
/// `make test` checks a sample of cut points (`POWER_CUT_CUTS`, 60) with `POWER_CUT_STATES` (8)
/// states each after `POWER_CUT_PHASES` (3) phases of `POWER_CUT_SECONDS` (1.5) of writes;
/// `make crash-test` every cut point of a longer recording.
@Suite(.serialized) struct PowerCutTests {
    /// How much is recorded and checked, from the environment.
    struct Scale {
        /// How many times secretd is started (each run ends with a stop or, every third from
        /// the second, a kill).
        var phases = 3
        /// How long the writers write in each.
        var seconds = 1.5
        /// Cut points to check; 0 for every one.
        var cuts = 60
        /// States rebuilt at each cut point: what was synced, everything, and random subsets.
        var statesPerCut = 8

        static var fromEnvironment: Scale {
            let environment = ProcessInfo.processInfo.environment
            var scale = Scale()
            if let value = environment["POWER_CUT_PHASES"].flatMap(Int.init) { scale.phases = max(1, value) }
            if let value = environment["POWER_CUT_SECONDS"].flatMap(Double.init) { scale.seconds = value }
            if let value = environment["POWER_CUT_CUTS"].flatMap(Int.init) { scale.cuts = max(0, value) }
            if let value = environment["POWER_CUT_STATES"].flatMap(Int.init) { scale.statesPerCut = max(2, value) }
            return scale
        }
    }

    /// What the writers were told before a cut.
    struct Expectations {
        /// Per key, the token of its last acknowledged write (`-`: deleted).
        var acknowledged: [String: String] = [:]
        /// Per key, the writes begun since then and not acknowledged: each may have landed.
        var inFlight: [String: [String]] = [:]
        /// How many writes were acknowledged in all.
        var count = 0

        mutating func note(_ event: IORecording.Event) {
            switch event {
            case .began(let key, let token): inFlight[key, default: []].append(token)
            case .acknowledged(let key, let token):
                acknowledged[key] = token
                inFlight[key] = nil
                count += 1
            default: break
            }
        }
    }

    /// The secret writer `writer` stores as item `n` (power-cut-writer.py's `secret`).
    static func secret(_ writer: String, _ n: Int) -> [UInt8] {
        let size = n % 5 == 0 ? 5000 + (n * 7919) % 3000 : 40 + (n * 7919) % 200
        let unit = Array("\(writer)-\(n):".utf8)
        var bytes: [UInt8] = []
        while bytes.count < size { bytes += unit }
        return Array(bytes.prefix(size))
    }

    static let password = "login-password"

    /// `scripts/power-cut/io-record.c`, compiled into `directory`.
    static func buildShim(_ fixture: SecretdFixture) throws -> URL {
        let source = DBusClients.directory.deletingLastPathComponent().appendingPathComponent("power-cut/io-record.c")
        let library = fixture.root.appendingPathComponent("io-record.so")
        let built = try fixture.run(["cc", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-o", library.path, source.path, "-ldl"])
        #expect(built.status == 0, "cc: \(built.errorOutput)")
        return library
    }

    @Test("power cuts at many points under three writers: every state opens, checks ok and holds every acknowledged secret exactly")
    func powerCuts() throws {
        let scale = Scale.fromEnvironment
        let started = Date()
        let fixture = try SecretdFixture()
        let shim = try Self.buildShim(fixture)
        let log = fixture.root.appendingPathComponent("io.log")
        let plain = fixture.environment
        let recorded = plain.merging([
            "LD_PRELOAD": shim.path, "IO_RECORD_DIR": fixture.dataDirectory.path, "IO_RECORD_LOG": log.path,
        ]) { $1 }

        // Record: each phase starts secretd, runs the writers, and ends with a clean stop
        // (the log folded into the database, the -wal removed) or, every third phase from the
        // second, with SIGKILL (the next start recovers the log).
        for phase in 0..<scale.phases {
            fixture.environment = recorded
            let daemon = try fixture.start(["--unlock"], input: Self.password)
            fixture.environment = plain
            let writers = try (0..<3).map { index in
                try SupervisedProcess(
                    DBusClients.command("power-cut-writer.py", ["w\(index)", log.path]), environment: plain,
                    logURL: fixture.root.appendingPathComponent("writer\(index)-\(phase).log"))
            }
            usleep(UInt32(scale.seconds * 1_000_000))
            if phase % 3 == 1 {
                // The writers held still first: secretd's last record may be cut short by the
                // kill, and is dropped before anyone appends after it (the files as found are
                // recorded next).
                let held = writers.compactMap(\.helperPID)
                for pid in held { kill(pid, SIGSTOP) }
                daemon.crash()
                try IORecording.dropTornRecord(atEndOf: log)
                for pid in held { kill(pid, SIGCONT) }
                for writer in writers { writer.stop() }
                try fixture.waitUntilNameIsFree()
                try Self.recordFiles(in: fixture.dataDirectory, to: log)
            } else {
                for writer in writers { writer.stop() }
                daemon.stop(timeout: 20)
            }
            try fixture.waitUntilNameIsFree()
        }
        let recordedAt = Date()

        // The login keyring's master key, derived once from the final database (a copy).
        let final = fixture.root.appendingPathComponent("final")
        try FileManager.default.copyItem(at: fixture.dataDirectory, to: final)
        let master: SecureBytes
        do {
            let store = try Store(directory: final)
            defer { store.close() }
            let login = try #require(try store.collection(named: "login"))
            master = try store.passwordLock(of: login).open(with: SecureBytes(Array(Self.password.utf8)))
        }

        let recording = try IORecording(contentsOf: log)
        // A cut before each file operation (after every line logged before it), and at the end.
        var candidates = recording.events.indices.filter { recording.events[$0].isFileOperation } + [recording.events.count]
        let allCuts = candidates.count
        var random = SeededRandom(printingSeedFor: "powerCuts")
        if scale.cuts > 0 && scale.cuts < candidates.count {
            candidates.shuffle(using: &random)
            candidates = Array(candidates.prefix(scale.cuts)).sorted()
        }
        let cuts = Set(candidates)

        // Replay, and check the states of each cut point before the event it precedes.
        // On tmpfs when there is one: opening a state syncs it, which a disk makes slow.
        let memory = URL(fileURLWithPath: "/dev/shm")
        let scratch = (FileManager.default.isWritableFile(atPath: memory.path) ? memory : fixture.root)
            .appendingPathComponent("secretd-power-cut-\(getpid())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        var disk = CrashStates()
        var expected = Expectations()
        var problems: [String] = []
        var states = 0, cutsChecked = 0, walless = 0, wallessCaught = 0
        for index in 0...recording.events.count {
            if cuts.contains(index) {
                cutsChecked += 1
                for number in 0..<scale.statesPerCut {
                    let survival: CrashStates.Survival = number == 0 ? .nothing : number == 1 ? .everything : .some
                    let files = disk.state(keeping: survival, random: &random)
                    states += 1
                    if let problem = Self.check(files, in: scratch, master: master, expected: expected) {
                        problems.append("cut before event \(index) of \(recording.events.count), \(survival) survived: \(problem)")
                    }
                    // The harness's own check: without its write-ahead log (as if its syncs had
                    // been ignored), a state that holds acknowledged writes there must fail. Not
                    // every such state does: a log already folded into the file (a checkpoint
                    // leaves its frames in place until the next write starts it again) loses
                    // nothing with it. So the checker must catch some of them, not all.
                    if survival == .everything, walless < 10, expected.count > 0,
                        let wal = files[Store.fileName + "-wal"], wal.count > 32
                    {
                        walless += 1
                        if Self.check(files.filter { $0.key != Store.fileName + "-wal" }, in: scratch, master: master, expected: expected) != nil {
                            wallessCaught += 1
                        }
                    }
                }
            }
            guard index < recording.events.count else { break }
            let event = recording.events[index]
            disk.apply(event)
            expected.note(event)
        }
        let elapsed = Date().timeIntervalSince(started)
        print("""
            power-cut: \(cutsChecked) cut points (of the recording's \(allCuts): one before each file operation \
            and its end), \(states) states checked; \(expected.count) writes acknowledged; \(Int(elapsed)) s \
            (recording \(Int(recordedAt.timeIntervalSince(started))) s); \(wallessCaught) of \(walless) states \
            stripped of their WAL were caught
            """)
        for problem in problems.prefix(20) { Issue.record(Comment(rawValue: problem)) }
        #expect(problems.isEmpty, "\(problems.count) of \(states) states failed")
        #expect(expected.count >= 50, "only \(expected.count) writes were acknowledged: the recording tested little")
        #expect(states >= min(scale.cuts, candidates.count) * scale.statesPerCut)
        #expect(walless > 0 && wallessCaught > 0, "the checker caught none of the states stripped of their WAL")
    }

    @Test("the automatic backups' directory, made at the first backup, is synced into the data directory: mkdir, then an fsync of the data directory")
    func backupDirectorySynced() throws {
        let fixture = try SecretdFixture()
        let shim = try Self.buildShim(fixture)
        let log = fixture.root.appendingPathComponent("io.log")
        try fixture.writeConfiguration("backup-interval = 1h\n")
        let plain = fixture.environment
        fixture.environment = plain.merging([
            "LD_PRELOAD": shim.path, "IO_RECORD_DIR": fixture.dataDirectory.path, "IO_RECORD_LOG": log.path,
            TestHooks.backupCheckInterval: "0.2",
        ]) { $1 }
        let daemon = try fixture.start(["--unlock"], input: Self.password)
        fixture.environment = plain
        let backups = fixture.dataDirectory.appendingPathComponent("backups")
        func taken() -> Bool {
            ((try? FileManager.default.contentsOfDirectory(atPath: backups.path)) ?? []).contains { $0.hasPrefix("secretd-") }
        }
        for _ in 0..<500 where !taken() { usleep(20_000) }
        daemon.stop()
        #expect(taken(), "no automatic backup was taken: \(daemon.log)")
        let events = try IORecording(contentsOf: log).events
        let made = events.firstIndex { if case .makeDirectory("backups") = $0 { true } else { false } }
        #expect(made != nil, "the shim saw no mkdir of backups")
        if let made {
            #expect(events[made...].contains { if case .sync(".") = $0 { true } else { false } },
                    "the data directory was not synced after backups was made")
        }
    }

    /// Appends to the recording `log` the files of `directory` as they are (``IORecording/Event/found(_:bytes:)``),
    /// after a kill. The shim records an operation once it has returned, so a SIGKILL between
    /// the two leaves the file changed and the recording without it, and the next phase's
    /// writes would be replayed onto files other than those they were made on (seen once under
    /// load: a write-ahead log's last frame missing from the replay, so that every frame the
    /// next phase added after it was unreadable, and the state lacked its acknowledged writes).
    /// A kill is no power cut: what was written stays in the page cache, so the files as they
    /// are is what the next start finds.
    static func recordFiles(in directory: URL, to log: URL) throws {
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        try handle.seekToEnd()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() where !name.hasSuffix("-shm") {
            var isDirectory: ObjCBool = false
            let path = directory.appendingPathComponent(name).path
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            try handle.write(contentsOf: Data("K \(name) \(bytes.count)\n".utf8) + bytes)
        }
    }

    /// What is wrong with `files` as the data directory after a cut, or nil: written into
    /// `directory` (emptied first) and opened as secretd opens it.
    static func check(_ files: [String: [UInt8]], in directory: URL, master: SecureBytes, expected: Expectations) -> String? {
        try? FileManager.default.removeItem(at: directory)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (name, bytes) in files { try Data(bytes).write(to: directory.appendingPathComponent(name)) }
            let store = try Store(directory: directory)
            defer { store.close() }
            let integrity = try store.database.rows("PRAGMA integrity_check").first?.first?.text
            guard integrity == "ok" else { return "integrity_check: \(integrity ?? "nothing")" }
            let orphans = try store.database.rows("SELECT count(*) FROM attribute_index WHERE item_id NOT IN (SELECT id FROM items)")
            guard orphans.first?.first?.integer == 0 else { return "index entries of items that are gone" }
            guard let login = try store.collection(named: "login") else {
                return expected.count == 0 ? nil : "no login keyring, after \(expected.count) acknowledged writes"
            }
            let keys = try store.unlock(login, master: master)
            var found: [String: String] = [:]
            for item in try store.search([:], in: login) {
                let contents = try store.readItem(item, in: login, keys: keys)
                let label = contents.label.split(separator: " ").map(String.init)
                guard let writer = contents.attributes["power-cut"], let key = contents.attributes["key"], label.count == 2,
                    label[0] == key, let n = Int(label[1].dropFirst())
                else { return "an item without a writer's attributes and label: \(contents.attributes), '\(contents.label)'" }
                let token = label[1]
                guard found[key] == nil else { return "two items for \(key): \(found[key] ?? "") and \(token)" }
                found[key] = token
                guard contents.secret.withBytes({ Array($0) }) == secret(writer, n) else {
                    return "\(key) \(token): the secret differs from the one stored"
                }
                let indexed = try store.search(["power-cut": writer, "key": key], in: login).map(\.id)
                guard indexed == [item.id] else { return "\(key): the attribute index finds \(indexed), not [\(item.id)]" }
            }
            for key in Set(expected.acknowledged.keys).union(expected.inFlight.keys).union(found.keys) {
                let value = found[key] ?? "-"
                let allowed = [expected.acknowledged[key] ?? "-"] + expected.inFlight[key, default: []]
                guard allowed.contains(value) else { return "\(key) is \(value), expected one of \(allowed)" }
            }
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("a record cut short by a kill is dropped from the log's end, so that the lines appended after it read as lines, not as its bytes")
    func tornRecord() throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("io-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let whole = Data("C db\nA w0 k1 t1\nW db 0 4\nabcd".utf8)
        try (whole + Data("W db 4 100\n0123456789".utf8)).write(to: log)
        try IORecording.dropTornRecord(atEndOf: log)
        #expect(try Data(contentsOf: log) == whole)
        let handle = try FileHandle(forWritingTo: log)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("F w1 k2 t2 org.freedesktop.DBus.Error.ServiceUnknown\n".utf8))
        try handle.close()
        let events = try IORecording(contentsOf: log).events
        #expect(events.count == 4)
        guard case .failed(let key, let token) = events.last else { Issue.record("the last event is \(String(describing: events.last))"); return }
        #expect(key == "k2" && token == "t2")
        try IORecording.dropTornRecord(atEndOf: log)
        #expect(try IORecording(contentsOf: log).events.count == 4, "a whole log is left as it is")
    }
}
