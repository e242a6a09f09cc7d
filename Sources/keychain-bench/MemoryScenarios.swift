import Foundation

/// The memory part of `make bench`: the provider's RSS before, at its peak and after the client
/// behaviour that ClientFaultTests and LoadTests check for function only, since what malloc
/// gives back, and when, is a measurement and not a pass or fail (bench/README.md, "Memory scenarios").
/// bench/run.sh starts a provider for each scenario alone. The clients are the tests' own, in
/// scripts/dbus-clients; the bench itself never calls the provider, so it triggers no trim.
struct MemoryScenarios {
    enum Scenario: String, CaseIterable {
        /// One client opens 500 sessions (secretd keeps 256), then is killed.
        case sessions
        /// Three flooders (reading, deaf, silent) and a victim whose latency is measured.
        case flood
        /// Clients x operations through Python secretstorage while the keyring is locked and unlocked.
        case load
    }

    let memory: ResidentMemory
    let options: Options

    /// Above this RSS the flooders are stopped early: gnome-keyring has no call quota, and
    /// nothing else bounds what it queues (2 GiB).
    static let ceilingKiB = 2 * 1024 * 1024
    /// How long a scenario's clients may take beyond their own duration before they are killed (s).
    static let grace = 120.0

    init(options: Options) throws {
        guard let pid = options.providerPID else { throw BenchError("--memory needs --provider-pid") }
        memory = ResidentMemory(pid: pid)
        self.options = options
    }

    func run(_ scenario: Scenario) throws -> [String: Any] {
        progress("memory: \(scenario.rawValue)")
        let start = ResidentMemory.now()
        let before = memory.settled()
        var result: [String: Any]
        var rss: [String: Any] = ["before_settled": before.settled]
        rss["before"] = before.kib
        let left: Double
        switch scenario {
        case .sessions: (result, left) = try sessions(rss: &rss)
        case .flood: (result, left) = try flood(rss: &rss)
        case .load: (result, left) = try load(rss: &rss)
        }
        let after = memory.afterwards(left: left)
        rss["after_1s"] = after.after1s
        rss["after_3s"] = after.after3s
        rss["settled"] = after.rest.kib
        rss["settled_from_s"] = after.rest.since
        rss["settled_in_time"] = after.rest.settled
        result["rss_kib"] = rss
        result["scenario"] = scenario.rawValue
        result["wall_seconds"] = round3(ResidentMemory.now() - start)  // the waits for RSS included
        return result
    }

    /// The session hoarder: RSS while it opens its sessions, with them open, and after it is
    /// killed (as ClientFaultTests kills it). Returns the report and when it was gone.
    private func sessions(rss: inout [String: Any]) throws -> ([String: Any], Double) {
        let start = ResidentMemory.now()
        let hoarder = try client("session-hoarder.py")
        var peak = memory.kib() ?? 0
        var report: [String: Any]?
        while report == nil, hoarder.exitStatus() == nil, ResidentMemory.now() < start + Self.grace {
            if let line = hoarder.readLine(timeout: 0.1) { report = Self.json(line) }
            peak = max(peak, memory.kib() ?? 0)
        }
        let opened = ResidentMemory.now() - start
        rss["with_sessions_open"] = memory.kib()
        rss["peak"] = max(peak, memory.kib() ?? 0)
        hoarder.kill()
        _ = hoarder.waitForExit()
        let left = ResidentMemory.now()
        guard let report else { throw BenchError("the session hoarder reported nothing") }
        return ([
            "seconds": round3(opened), "opened": report["opened"] ?? 0,
            "usable": (report["usable"] as? [Int])?.count ?? 0, "errors": report["errors"] ?? [],
        ], left)
    }

    /// The flood: RSS under it and after; the victim's operations and latencies; what each
    /// flooder sent and got back.
    private func flood(rss: inout [String: Any]) throws -> ([String: Any], Double) {
        let seconds = options.floodSeconds
        let flooders = try ["reading", "deaf", "silent"].map { try client("flooder.py", [$0, String(seconds)]) }
        let victim = try client("victim.py", [String(seconds)])
        let (peak, stoppedAt, cutOff) = watch(flooders + [victim], for: seconds) { kib in
            guard kib > Self.ceilingKiB else { return false }
            for flooder in flooders { flooder.kill() }
            return true
        }
        let left = ResidentMemory.now()
        rss["peak"] = peak
        var result: [String: Any] = ["seconds": seconds, "cut_off": cutOff]
        if let stoppedAt { result["flooders_stopped_at_ceiling_s"] = round3(stoppedAt) }
        result["victim"] = victim.readLine(timeout: 1).flatMap(Self.json) ?? ["exit_status": victim.waitForExit()]
        result["flooders"] = flooders.map { flooder -> [String: Any] in
            var report = flooder.readLine(timeout: 1).flatMap(Self.json) ?? [:]
            report["exit_status"] = flooder.waitForExit()
            return report
        }
        return (result, left)
    }

    /// Many clients while the keyring is locked and unlocked: RSS under the load and after;
    /// how long it took, the failures and the refusals while locked.
    private func load(rss: inout [String: Any]) throws -> ([String: Any], Double) {
        let start = ResidentMemory.now()
        let clients = try (0..<options.loadClients).map {
            try client("load-client.py", ["c\($0)", String(options.loadOperations), String($0)])
        }
        let locker = try client("locker.py", ["6", options.password ?? "login-password"])
        let (peak, _, cutOff) = watch(clients + [locker], for: options.loadSeconds) { _ in false }
        let left = ResidentMemory.now()
        rss["peak"] = peak
        let reports = clients.compactMap { $0.readLine(timeout: 1).flatMap(Self.json) }
        return ([
            "clients": options.loadClients, "operations_per_client": options.loadOperations,
            "seconds": round3(left - start), "cut_off": cutOff, "completed": reports.count,
            "failures": reports.reduce(0) { $0 + ($1["failure_count"] as? Int ?? 0) },
            "locked_refusals": reports.reduce(0) { $0 + ($1["locked"] as? Int ?? 0) },
            "first_failures": Array(reports.flatMap { $0["failures"] as? [String] ?? [] }.prefix(5)),
            "locker_exit_status": locker.waitForExit(),
        ], left)
    }

    /// Reads RSS every 0.1 s until every child has exited, killing them all `seconds` +
    /// ``grace`` from now; `stop(kib)` may end some early (once it returns true it is not asked
    /// again). The peak, when `stop` first returned true (s), and whether any had to be killed.
    private func watch(_ children: [Child], for seconds: Double, stop: (Int) -> Bool)
        -> (peak: Int, stoppedAt: Double?, cutOff: Bool)
    {
        let start = ResidentMemory.now()
        var peak = 0
        var stoppedAt: Double?
        while children.contains(where: { $0.exitStatus() == nil }) {
            let elapsed = ResidentMemory.now() - start
            guard elapsed < seconds + Self.grace else {
                for child in children { child.kill() }
                for child in children { _ = child.waitForExit() }
                return (peak, stoppedAt, true)
            }
            let kib = memory.kib() ?? 0
            peak = max(peak, kib)
            if stoppedAt == nil, stop(kib) { stoppedAt = elapsed }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return (max(peak, memory.kib() ?? 0), stoppedAt, false)
    }

    /// Starts shared client `name` of scripts/dbus-clients with Debian's Python (`-B`: no
    /// `__pycache__` in the source tree).
    private func client(_ name: String, _ arguments: [String] = []) throws -> Child {
        try Child([options.python, "-B", options.clients + "/" + name] + arguments)
    }

    private static func json(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    private func progress(_ text: String) {
        FileHandle.standardError.write(Data("  \(text)\n".utf8))
    }
}
