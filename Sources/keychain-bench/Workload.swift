import Foundation
import Keychain

/// The phases `make bench` times, for each size N, starting from an empty keyring, through
/// libsecret's own calls: store N, look up N in random order, search all and load all
/// secrets, replace N/10, delete N. Also the Keychain library's set and get, the round-trip
/// floor (a no-op call to ``FloorService`` right before each phase), whole-process lookups, the
/// provider's memory and disk use, unlock, concurrent storing clients, and the provider's CPU
/// per store and per lookup.
struct Workload {
    let options: Options
    let service = "bench"

    /// The account name of item `index`.
    func account(_ index: Int) -> String { String(format: "a%06d", index) }
    /// The secret of item `index` in `round`: 32 bytes.
    func secret(_ index: Int, round: Int = 0) -> String { String(format: "secret-%06d-%02d-xxxxxxxxxxxxxxx", index, round) }

    func run() throws -> [String: Any] {
        var report: [String: Any] = [:]
        try KeychainProvider.ping()  // opens the connection and session outside the timings
        _ = try floor.samples(50)
        // The provider's own Peer.Ping: a reference only; the floors are the floor service's.
        var ping = Samples()
        for _ in 0..<300 { try ping.time { try KeychainProvider.ping() } }
        report["provider_ping"] = ping.summary
        report["floor_service"] = ["noop": try floor.samples(500).summary, "ping": try floor.samples(500, ping: true).summary]
        report["rss_kib_start"] = rssKiB()
        var sizes: [[String: Any]] = []
        for size in options.sizes { sizes.append(try cycle(size)) }
        report["sizes"] = sizes
        // After the sizes' deletes the keyring is empty again: the CPU phase starts from none.
        if options.cpuStores > 0 { report["cpu"] = try cpuPerCall(stores: options.cpuStores, lookups: options.cpuLookups) }
        if options.extras {
            if let password = options.password { report["unlock"] = try unlock(password: password).summary }
            report["concurrency"] = try concurrency()
        }
        report["rss_kib_end"] = rssKiB()
        return report
    }

    /// The floor service on the provider's bus (bench/run.sh starts it; ``FloorService``).
    private let floor = FloorClient()
    /// No-op round trips timed right before and right after each phase they are the floor of.
    private let floorCalls = 100
    /// Durable commits (bench/commit-floor.py) timed right before and right after each phase that writes.
    private let floorCommits = 50

    /// Runs `body`, a phase, between two runs of the floors: round trips to the floor service
    /// and, for a phase that writes (`commits`) and when ``Options/commitFloor`` is set, durable
    /// commits. Both runs go into `floors[name]` (`roundtrip` and `commit`), so that the floor
    /// of a phase is measured next to it in time, and moves with the machine as it does.
    private func withFloors(_ name: String, commits: Bool, into floors: inout [String: Any], _ body: () throws -> Void) throws {
        var trips = try floor.samples(floorCalls)
        var durable = commits ? try commitSamples() : nil
        try body()
        trips.add(try floor.samples(floorCalls))
        if let more = commits ? try commitSamples() : nil { durable?.add(more) }
        var result: [String: Any] = ["roundtrip": trips.summary]
        if let durable { result["commit"] = durable.summary }
        floors[name] = result
    }

    /// ``floorCommits`` durable commits from bench/commit-floor.py, in the directory given, or
    /// nil without one.
    private func commitSamples() throws -> Samples? {
        guard let directory = options.commitFloorDirectory else { return nil }
        let child = try Child([options.python, options.commitFloor, directory, "\(floorCommits)"])
        let text = child.readLine()
        guard child.waitForExit() == 0,
            let report = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let values = report["samples_ms"] as? [Double]
        else { throw BenchError("\(options.commitFloor) failed") }
        return Samples(values)
    }

    /// The provider's own CPU time per store and per lookup (user + system, from
    /// /proc/PID/stat) over `stores` new items and `lookups` lookups of them in random order,
    /// and the floor service's CPU per call over as many calls as lookups, of its no-op (through
    /// its main loop) and of `Peer.Ping` (GDBus's thread only): what GDBus alone costs a service
    /// per call.
    private func cpuPerCall(stores: Int, lookups: Int) throws -> [String: Any] {
        let cpuService = "bench.cpu"
        func attributes(_ index: Int) -> [String: String] { ["service": cpuService, "account": account(index)] }
        var result: [String: Any] = ["stores": stores, "lookups": lookups]
        progress("CPU per call: \(stores) stores")
        var store = Samples()
        let storesBefore = providerCPUSeconds()
        for index in 0..<stores {
            try store.time { try KeychainAttributes.libsecretStore(attributes(index), label: label(index), secret: Data(secret(index).utf8)) }
        }
        if let before = storesBefore, let after = providerCPUSeconds() {
            result["store_cpu_ms_per_call"] = round3((after - before) * 1000 / Double(stores))
        }
        result["store"] = store.summary
        progress("CPU per call: \(lookups) lookups")
        var lookup = Samples()
        let indices = (0..<lookups).map { _ in Int.random(in: 0..<stores) }
        let lookupsBefore = providerCPUSeconds()
        for index in indices {
            let value = try lookup.time { try KeychainAttributes.libsecretLookup(attributes(index)) }
            guard value == Data(secret(index).utf8) else { throw BenchError("lookup of \(account(index)) returned the wrong secret") }
        }
        if let before = lookupsBefore, let after = providerCPUSeconds() {
            result["lookup_cpu_ms_per_call"] = round3((after - before) * 1000 / Double(lookups))
        }
        result["lookup"] = lookup.summary
        // The floors of the provider's CPU per call, measured in the provider itself: its bus
        // library's Peer.Ping, and the cheapest Secret Service call through its own dispatch.
        if let providerPID = options.providerPID {
            for ping in [true, false] {
                progress("CPU per call: \(lookups) \(ping ? "Peer.Ping" : "ReadAlias") calls to the provider")
                let before = Self.cpuSeconds(pid: providerPID)
                for _ in 0..<lookups { try floor.callProvider(ping: ping) }
                if let before, let after = Self.cpuSeconds(pid: providerPID) {
                    result[ping ? "provider_ping_cpu_ms_per_call" : "provider_read_alias_cpu_ms_per_call"] =
                        round3((after - before) * 1000 / Double(lookups))
                }
            }
        }
        if let floorPID = options.floorPID {
            // The no-op through the main loop, as the floor; Peer.Ping in GDBus's thread alone.
            for ping in [false, true] {
                progress("CPU per call: \(lookups) \(ping ? "Peer.Ping" : "no-op") calls to the floor service")
                let before = Self.cpuSeconds(pid: floorPID)
                let calls = try floor.samples(lookups, ping: ping)
                if let before, let after = Self.cpuSeconds(pid: floorPID) {
                    result[ping ? "floor_service_ping_cpu_ms_per_call" : "floor_service_cpu_ms_per_call"] =
                        round3((after - before) * 1000 / Double(lookups))
                }
                result[ping ? "ping" : "noop"] = calls.summary
            }
        }
        return result
    }

    /// The round-trip floor and `count` lookups of item 0, timed as ``cycle(_:)`` times its
    /// lookups: what `make bench` runs against ``NoWorkProvider``.
    func lookupsOnly(count: Int) throws -> [String: Any] {
        for _ in 0..<50 { _ = try KeychainAttributes.libsecretLookup(attributes(0)) }  // session and proxies
        _ = try floor.samples(50)
        let floor = try floor.samples(500)
        var lookup = Samples()
        for _ in 0..<count {
            let value = try lookup.time { try KeychainAttributes.libsecretLookup(attributes(0)) }
            guard value == Data(secret(0).utf8) else { throw BenchError("lookup of \(account(0)) returned the wrong secret") }
        }
        return ["roundtrip_floor": floor.summary, "lookup": lookup.summary]
    }

    /// How many times the search-all phase runs at `size` items: a search of 100 items takes
    /// about 100 ms, so 3 samples a round were too few on a noisy machine to say which provider
    /// is faster; the larger sizes, seconds a search, keep 3 and then 1.
    static func searchAllSamples(_ size: Int) -> Int { size <= 100 ? 15 : size <= 3000 ? 3 : 1 }

    /// The attributes of item `index`.
    func attributes(_ index: Int) -> [String: String] { ["service": service, "account": account(index)] }
    /// The label of item `index`.
    func label(_ index: Int) -> String { "\(service) \(account(index))" }

    /// One full cycle at `size` items, through libsecret's own calls (as secret-tool, Python
    /// keyring and most clients make them), then a sample through the Keychain library.
    private func cycle(_ size: Int) throws -> [String: Any] {
        var result: [String: Any] = ["items": size]
        var floors: [String: Any] = [:]
        progress("\(size): store")
        var store = Samples()
        try withFloors("store", commits: true, into: &floors) {
            for index in 0..<size {
                try store.time { try KeychainAttributes.libsecretStore(attributes(index), label: label(index), secret: Data(secret(index).utf8)) }
            }
        }
        result["store"] = store.summary
        result["store_first_100"] = store.slice(first: true, 100).summary
        result["store_last_100"] = store.slice(first: false, 100).summary
        result["rss_kib"] = rssKiB()
        result["data_bytes"] = dataBytes()
        result["journal_bytes"] = dataBytes(journalOnly: true)
        result["plaintext_bytes"] = plaintextBytes(size)

        progress("\(size): lookup")
        var lookup = Samples()
        try withFloors("lookup", commits: false, into: &floors) {
            for index in (0..<size).shuffled() {
                let value = try lookup.time { try KeychainAttributes.libsecretLookup(attributes(index)) }
                guard value == Data(secret(index).utf8) else { throw BenchError("lookup of \(account(index)) returned the wrong secret") }
            }
        }
        result["lookup"] = lookup.summary

        progress("\(size): Keychain library set and get (200 more items)")
        let keychain = try Keychain(service: "bench.library")
        var librarySet = Samples()
        var libraryGet = Samples()
        try withFloors("library", commits: true, into: &floors) {
            for index in 0..<200 {
                try librarySet.time { try keychain.set(secret(index), for: account(index)) }
                let value = try libraryGet.time { try keychain.string(for: account(index)) }
                guard value == secret(index) else { throw BenchError("the library read back the wrong secret") }
            }
        }
        _ = try keychain.removeAll()
        result["keychain_set"] = librarySet.summary
        result["keychain_get"] = libraryGet.summary

        progress("\(size): whole-process lookups")
        let probe = account(size / 2)
        if let secretctl = options.secretctl {
            result["secretctl_get_process"] = try processTimes([secretctl, "get", service, probe], expect: secret(size / 2)).summary
        }
        result["secret_tool_lookup_process"] = try processTimes(
            [options.secretTool, "lookup", "service", service, "account", probe], expect: secret(size / 2)).summary

        progress("\(size): search all")
        // RSS settled before the search, at its peak, and settled again after it: the memory a
        // search that loads every secret takes should be given back once it is over.
        result["rss_kib_before_search_all"] = settledRSSKiB(deadline: 5)
        let peakWatch = options.providerPID.map { ResidentMemory(pid: $0).watchPeak() }
        var searchAll = Samples()
        try withFloors("search_all", commits: false, into: &floors) {
            for _ in 0..<Self.searchAllSamples(size) {
                let found = try searchAll.time {
                    try KeychainAttributes.search(["service": service], unlock: false, loadSecrets: true)
                }
                guard found.count == size, found.allSatisfy({ $0.secret != nil }) else {
                    throw BenchError("search all found \(found.count) of \(size) items")
                }
            }
        }
        result["search_all_load_secrets"] = searchAll.summary
        result["rss_kib_search_all_peak"] = peakWatch?.stop()
        result["rss_kib_after_search_all"] = settledRSSKiB(deadline: 10)

        progress("\(size): replace")
        var replace = Samples()
        try withFloors("replace", commits: true, into: &floors) {
            for index in (0..<size).shuffled().prefix(max(1, size / 10)) {
                try replace.time {
                    try KeychainAttributes.libsecretStore(attributes(index), label: label(index), secret: Data(secret(index, round: 1).utf8))
                }
            }
        }
        result["replace"] = replace.summary

        progress("\(size): delete")
        var delete = Samples()
        try withFloors("delete", commits: true, into: &floors) {
            for index in 0..<size {
                let removed = try delete.time { try KeychainAttributes.libsecretClear(attributes(index)) }
                guard removed else { throw BenchError("\(account(index)) was not there to delete") }
            }
        }
        result["delete"] = delete.summary
        result["floors"] = floors
        result["rss_kib_after_delete"] = rssKiB()
        return result
    }

    /// Lock, then unlock with the password, five times.
    private func unlock(password: String) throws -> Samples {
        var samples = Samples()
        for _ in 0..<5 {
            try KeychainProvider.lock()
            try samples.time { try KeychainProvider.unlock(password: Array(password.utf8)) }
        }
        return samples
    }

    /// Stores per second of one client, and of eight clients (separate processes, so separate
    /// connections) storing at once, each storing ``Options/concurrencyStores`` new items; with
    /// how busy the machine's CPUs were and the CPU time one store took, in all processes, in
    /// the clients, in the bus and in the provider, which tell whether more clients could have
    /// gone faster and where their CPU went.
    private func concurrency() throws -> [String: Any] {
        let perClient = options.concurrencyStores
        var result: [String: Any] = ["stores_per_client": perClient]
        for clients in [1, 8] {
            progress("concurrency: \(clients) clients")
            // Every client starts, connects and stores once before the clock starts; then all
            // are told to go at once, and the clock stops when the last one has exited.
            let workers = try (0..<clients).map { id in
                try Child([CommandLine.arguments[0], "--store-worker", "\(clients)-\(id)", "\(perClient)"], input: true)
            }
            for worker in workers where worker.readLine() != "ready" { throw BenchError("a storing client did not start") }
            // CPU to the nanosecond: 300 stores take a few hundred ms, and /proc/PID/stat counts
            // in ticks of 10 ms. The clients' CPU once they are ready (start and warm-up) is
            // taken off the CPU of all of them when they have been waited for.
            let clientsReady = workers.map { Self.threadsCPUSeconds(pid: $0.pid) }
            let childrenBefore = Self.waitedForChildrenCPUSeconds()
            let machineBefore = Self.machineCPU()
            let providerBefore = options.providerPID.flatMap(Self.threadsCPUSeconds(pid:))
            let busBefore = options.busPID.flatMap(Self.threadsCPUSeconds(pid:))
            let start = DispatchTime.now().uptimeNanoseconds
            for worker in workers { worker.go() }
            for worker in workers where worker.waitForExit() != 0 { throw BenchError("a storing client failed") }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            let stores = Double(clients * perClient)
            result["stores_per_second_\(clients)"] = round3(stores / seconds)
            if let before = machineBefore, let after = Self.machineCPU() {
                let busy = after.busy - before.busy
                result["cpu_busy_fraction_\(clients)"] = round3(busy / (after.total - before.total))
                result["cpu_ms_per_store_\(clients)"] = round3(busy * 1000 / stores)
            }
            if let before = providerBefore, let after = options.providerPID.flatMap(Self.threadsCPUSeconds(pid:)) {
                result["provider_cpu_ms_per_store_\(clients)"] = round3((after - before) * 1000 / stores)
            }
            if let before = busBefore, let after = options.busPID.flatMap(Self.threadsCPUSeconds(pid:)) {
                result["bus_cpu_ms_per_store_\(clients)"] = round3((after - before) * 1000 / stores)
            }
            let ready = clientsReady.compactMap { $0 }
            if ready.count == workers.count {
                let timed = Self.waitedForChildrenCPUSeconds() - childrenBefore - ready.reduce(0, +)
                result["clients_cpu_ms_per_store_\(clients)"] = round3(timed * 1000 / stores)
            }
        }
        return result
    }

    /// CPU seconds process `pid`'s live threads have used, to the nanosecond
    /// (/proc/PID/task/*/schedstat; threads that have ended are not counted).
    private static func threadsCPUSeconds(pid: Int32) -> Double? {
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var nanoseconds = 0.0
        for thread in threads {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/schedstat", encoding: .utf8),
                let onCPU = stat.split(separator: " ").first.flatMap({ Double($0) })
            else { return nil }
            nanoseconds += onCPU
        }
        return nanoseconds / 1e9
    }

    /// CPU seconds (user and system) of the children this process has waited for, in all.
    private static func waitedForChildrenCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// CPU seconds the machine has spent busy, and in all, summed over its CPUs (/proc/stat).
    private static func machineCPU() -> (busy: Double, total: Double)? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return nil }
        let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard ticks.count >= 5 else { return nil }
        let total = ticks.prefix(8).reduce(0, +)  // user nice system idle iowait irq softirq steal
        let idle = ticks[3] + ticks[4]
        let hertz = Double(sysconf(Int32(_SC_CLK_TCK)))
        return ((total - idle) / hertz, total / hertz)
    }

    /// CPU seconds the provider has used (user and system), when its pid was given.
    private func providerCPUSeconds() -> Double? {
        options.providerPID.flatMap(Self.cpuSeconds(pid:))
    }

    /// CPU seconds process `pid` has used, all its threads (ended ones too), user and system
    /// (/proc/PID/stat, in ticks of 10 ms: for phases of seconds; ``threadsCPUSeconds(pid:)`` for
    /// short ones).
    private static func cpuSeconds(pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3, utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// One concurrent storing client: connects and stores a first item, says `ready` on
    /// standard output, waits for a byte on standard input, then stores `count` new items.
    /// Exit status.
    static func storeWorker(id: String, count: Int) -> Int32 {
        do {
            try KeychainAttributes.libsecretStore(
                ["service": "bench.worker.\(id)", "account": "warm-up"], label: "warm-up", secret: Data("warm-up".utf8))
            _ = "ready\n".withCString { write(1, $0, 6) }
            var go: UInt8 = 0
            guard read(0, &go, 1) == 1 else { return 1 }
            for index in 0..<count {
                try KeychainAttributes.libsecretStore(
                    ["service": "bench.worker.\(id)", "account": "w\(index)"], label: "w\(index)",
                    secret: Data("worker-secret-\(index)".utf8))
            }

            return 0
        } catch {
            FileHandle.standardError.write(Data("keychain-bench worker \(id): \(error)\n".utf8))
            return 1
        }
    }

    /// Runs `command` 30 times as a whole process; its output must be `expect`.
    private func processTimes(_ command: [String], expect: String) throws -> Samples {
        var samples = Samples()
        for _ in 0..<30 {
            let (child, status) = try samples.time { () throws -> (Child, Int32) in
                let child = try Child(command)
                return (child, child.waitForExit())
            }
            let text = child.readLine()
            guard status == 0, text == expect else { throw BenchError("\(command[0]) failed (status \(status))") }
        }
        return samples
    }

    /// The provider's resident memory in KiB, when its pid was given.
    private func rssKiB() -> Int? {
        options.providerPID.flatMap { ResidentMemory(pid: $0).kib() }
    }

    /// ``rssKiB()`` once it has settled (or after `deadline` seconds).
    private func settledRSSKiB(deadline: Double) -> Int? {
        options.providerPID.flatMap { ResidentMemory(pid: $0).settled(deadline: deadline).kib }
    }

    /// The bytes of every file under the provider's data directory; with `journalOnly`, of
    /// SQLite's write-ahead log and its index (`-wal`, `-shm`) only: a fixed overhead, which
    /// checkpoints keep near 4 MiB and a clean stop folds into the database.
    private func dataBytes(journalOnly: Bool = false) -> Int? {
        guard let directory = options.dataDirectory,
            let enumerator = FileManager.default.enumerator(atPath: directory)
        else { return nil }
        var total = 0
        for case let name as String in enumerator where !journalOnly || name.hasSuffix("-wal") || name.hasSuffix("-shm") {
            let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)
            if attributes?[.type] as? FileAttributeType == .typeRegular { total += (attributes?[.size] as? Int) ?? 0 }
        }
        return total
    }

    /// What `size` items hold in plaintext: label, attribute names and values, secret.
    private func plaintextBytes(_ size: Int) -> Int {
        (0..<size).reduce(0) { total, index in
            total + label(index).utf8.count + secret(index).utf8.count
                + attributes(index).reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        }
    }

    private func progress(_ text: String) {
        FileHandle.standardError.write(Data("  \(text)\n".utf8))
    }
}

/// A benchmark that could not run as it should.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
