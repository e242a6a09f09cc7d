import Foundation
import KeychainTestSupport
@testable import SecretCrypto
@testable import SecretStore
import Testing

/// secretd killed with SIGKILL while several libsecret clients (`secret-tool`) store, replace
/// and delete: after a restart every acknowledged operation is there, nothing else is, every
/// item decrypts, and SQLite's integrity check passes.
@Suite struct CrashSafetyTests {
    /// One writer: a shell loop over its own keys that logs `start KEY VALUE` before each
    /// secret-tool call and `ack KEY VALUE` after it succeeded (`-` as the value: a delete).
    ///
    /// Told to stop (SIGTERM), it ends its secret-tool and waits for it first: a secret-tool
    /// left running would write into the next round, after its round's checks (under load it
    /// can still be starting when secretd comes back).
    static let writer = #"""
        #!/bin/sh
        log="$1"; name="$2"; n=0; tool=
        trap '[ -n "$tool" ] && kill "$tool" 2>/dev/null; wait; exit 0' TERM
        while :; do
            n=$((n + 1)); key="$name-$((n % 5))"
            if [ $((n % 4)) = 0 ]; then
                echo "start $key -" >>"$log"
                secret-tool clear writer "$name" key "$key" & tool=$!
                wait "$tool" && echo "ack $key -" >>"$log"
            else
                echo "start $key v$n" >>"$log"
                printf %s "v$n" | secret-tool store --label="$key" writer "$name" key "$key" & tool=$!
                wait "$tool" && echo "ack $key v$n" >>"$log"
            fi
        done
        """#

    /// A fixture with the writer script in it.
    static func fixtureWithWriter() throws -> (SecretdFixture, URL) {
        let fixture = try SecretdFixture()
        let script = fixture.root.appendingPathComponent("writer.sh")
        try ExecutableFile.write(script: writer, to: script)
        return (fixture, script)
    }

    /// Starts three writers (`w0`, `w1`, `w2`) logging to `logs`.
    static func startWriters(_ fixture: SecretdFixture, _ script: URL, logs: [URL]) throws -> [SupervisedProcess] {
        try logs.enumerated().map { index, log in
            try SupervisedProcess(["/bin/sh", script.path, log.path, "w\(index)"], environment: fixture.environment,
                                  logURL: log.appendingPathExtension("out"))
        }
    }

    @Test("20 rounds of SIGKILL under three concurrent writers lose nothing acknowledged")
    func killedUnderLoad() throws {
        let (fixture, script) = try Self.fixtureWithWriter()
        var expected: [String: String] = [:]  // key -> value, or "-" for absent
        var acknowledged = 0
        var daemon = try fixture.start()
        var random = SeededRandom(printingSeedFor: "killedUnderLoad")
        for round in 0..<20 {
            let logs = (0..<3).map { fixture.root.appendingPathComponent("round\(round)-w\($0).log") }
            let writers = try Self.startWriters(fixture, script, logs: logs)
            usleep(UInt32.random(in: 300_000...900_000, using: &random))
            daemon.crash()
            for writer in writers { writer.stop() }
            try fixture.waitUntilNameIsFree()
            daemon = try fixture.start()

            // Per key: the last acknowledged value, unless an operation was in flight at the kill,
            // in which case either outcome is allowed.
            var inFlight: [String: String] = [:]
            for log in logs {
                let lines = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n")
                var pending: (String, String)?
                for line in lines {
                    let parts = line.split(separator: " ").map(String.init)
                    guard parts.count == 3 else { continue }
                    // The first start after the last ack was in flight at the kill; later ones
                    // found no provider and changed nothing.
                    if parts[0] == "start", pending == nil { pending = (parts[1], parts[2]) }
                    if parts[0] == "ack" {
                        acknowledged += 1
                        expected[parts[1]] = parts[2]
                        pending = nil
                    }
                }
                if let (key, value) = pending { inFlight[key] = value }
            }
            for writer in 0..<3 {
                for slot in 0..<5 {
                    let key = "w\(writer)-\(slot)"
                    let found = try fixture.run(["secret-tool", "lookup", "writer", "w\(writer)", "key", key])
                    let value = found.status == 0 ? found.text : "-"
                    let allowed = [expected[key] ?? "-", inFlight[key]].compactMap { $0 }
                    if !allowed.contains(value) {
                        let all = try fixture.run(["secret-tool", "search", "--all", "writer", "w\(writer)", "key", key])
                        let logLines = logs.flatMap { ((try? String(contentsOf: $0, encoding: .utf8)) ?? "").split(separator: "\n") }
                            .filter { $0.contains(" \(key) ") }
                        Issue.record("round \(round): \(key) is \(value), expected one of \(allowed); items: \(all.text) \(all.errorOutput); log: \(logLines)")
                    }
                    if value != expected[key] ?? "-" { expected[key] = value }  // the in-flight one landed
                }
            }
        }
        #expect(acknowledged >= 100, "only \(acknowledged) operations were acknowledged: the rounds tested little")
        daemon.stop()
        try fixture.waitUntilNameIsFree()
        let database = try Database(path: fixture.dataDirectory.appendingPathComponent(Store.fileName).path)
        #expect(try database.rows("PRAGMA integrity_check").first?.first?.text == "ok")
    }

    @Test("snapshots of the database files taken mid-write (secretd frozen at random moments) open, check and decrypt")
    func snapshotsMidWrite() throws {
        let (fixture, script) = try Self.fixtureWithWriter()
        let daemon = try fixture.start()
        defer { daemon.stop() }
        let pid = try #require(daemon.helperPID)
        let writers = try Self.startWriters(fixture, script, logs: (0..<3).map { fixture.root.appendingPathComponent("w\($0).log") })
        defer { writers.forEach { $0.stop() } }
        var itemsRead = 0
        var random = SeededRandom(printingSeedFor: "snapshotsMidWrite")
        for snapshot in 0..<20 {
            usleep(UInt32.random(in: 50_000...250_000, using: &random))
            // SIGSTOP freezes secretd wherever it is, mid-transaction included: the files are
            // copied as a crash at that instant would leave them.
            kill(pid, SIGSTOP)
            let copy = fixture.root.appendingPathComponent("snapshot\(snapshot)")
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            for suffix in ["", "-wal"] {
                let source = fixture.dataDirectory.appendingPathComponent(Store.fileName + suffix)
                if FileManager.default.fileExists(atPath: source.path) {
                    try FileManager.default.copyItem(at: source, to: copy.appendingPathComponent(Store.fileName + suffix))
                }
            }
            kill(pid, SIGCONT)

            let store = try Store(directory: copy)  // runs SQLite's quick_check
            let login = try #require(try store.collection(named: "login"))
            let key = try store.unlock(login, password: SecureBytes(Array("login-password".utf8)))
            for item in try store.search([:], in: login) {
                let contents = try store.readItem(item, in: login, keys: key)
                #expect(contents.secret.count > 0)
                itemsRead += 1
            }
            let database = try Database(path: copy.appendingPathComponent(Store.fileName).path)
            #expect(try database.rows("PRAGMA integrity_check").first?.first?.text == "ok")
        }
        #expect(itemsRead >= 20, "the snapshots held only \(itemsRead) items")
    }
}
