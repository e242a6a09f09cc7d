// The benchmark client of `make bench` (bench/run.sh starts each provider on a private bus and
// runs this against it). Every operation goes through the Keychain library and libsecret, one
// at a time, as a real client's would. Prints one JSON object (see bench/README.md).
//
// usage: keychain-bench --sizes 100,1000 [--provider-pid PID] [--floor-pid PID] [--data-dir DIR] [--password PW]
//                       [--secretctl PATH] [--secret-tool PATH] [--extras yes|no]
//                       [--cpu-stores 10000] [--cpu-lookups 10000] [--concurrency-stores 300]
//                       [--commit-floor-dir DIR] [--commit-floor bench/commit-floor.py]
//                                                   (one round against one provider; the floor service
//                                                   must own its name on the same bus)
//        keychain-bench --serve-floor               (the floor service: a no-op method, FloorService.swift)
//        keychain-bench --serve-stand-in            (bench/stall.sh's floor: a Secret Service storing nothing, StandInService.swift)
//        keychain-bench --store-worker ID COUNT     (one of the concurrent storing clients)
//        keychain-bench --serve-no-work main-loop|worker-thread   (a provider that does no work)
//        keychain-bench --lookups COUNT             (lookups and the round-trip floor only)
//        keychain-bench --memory sessions|flood|load --provider-pid PID [--clients DIR] [--password PW]
//                       [--flood-seconds 10] [--load-clients 16] [--load-operations 500] [--load-seconds 300]
//                                                   (one memory scenario, MemoryScenarios.swift)

import Foundation
import Keychain

/// Command-line options.
struct Options {
    var sizes: [Int] = [100]
    var providerPID: Int32?
    var dataDirectory: String?
    var password: String?
    var secretctl: String?
    var secretTool = "/usr/bin/secret-tool"
    /// The floor service's process, for its CPU per no-op call.
    var floorPID: Int32?
    /// The bus's dbus-daemon, for its share of the concurrent clients' CPU per store.
    var busPID: Int32?
    /// Whether to run unlock and the concurrent clients (bench/run.sh: in the first round only).
    var extras = true
    /// How many new items and lookups the provider's CPU per call is measured over (0: not measured).
    var cpuStores = 0
    var cpuLookups = 0
    /// Where bench/commit-floor.py writes its scratch database (the provider's disk), and the
    /// script; without a directory no phase gets a commit floor of its own.
    var commitFloorDirectory: String?
    var commitFloor = "bench/commit-floor.py"
    /// How many new items each concurrent storing client stores.
    var concurrencyStores = 300
    /// The memory scenario to run instead of the sizes.
    var memory: MemoryScenarios.Scenario?
    /// The shared Python clients (scripts/dbus-clients) and the Python that runs them.
    var clients = "scripts/dbus-clients"
    var python = "/usr/bin/python3"
    var floodSeconds = 10.0
    var loadClients = 16
    var loadOperations = 500
    /// How long the load's clients may take (s); ``MemoryScenarios/grace`` later they are killed.
    var loadSeconds = 300.0

    init(_ arguments: [String]) {
        var words = arguments.makeIterator()
        while let word = words.next() {
            let value = words.next() ?? ""
            switch word {
            case "--sizes": sizes = value.split(separator: ",").compactMap { Int($0) }
            case "--provider-pid": providerPID = Int32(value)
            case "--data-dir": dataDirectory = value
            case "--password": password = value
            case "--secretctl": secretctl = value
            case "--secret-tool": secretTool = value
            case "--floor-pid": floorPID = Int32(value)
            case "--bus-pid": busPID = Int32(value)
            case "--extras": extras = value != "no"
            case "--cpu-stores": cpuStores = Int(value) ?? cpuStores
            case "--cpu-lookups": cpuLookups = Int(value) ?? cpuLookups
            case "--commit-floor-dir": commitFloorDirectory = value
            case "--commit-floor": commitFloor = value
            case "--concurrency-stores": concurrencyStores = Int(value) ?? concurrencyStores
            case "--memory":
                guard let scenario = MemoryScenarios.Scenario(rawValue: value) else { Self.fail("unknown memory scenario \(value)") }
                memory = scenario
            case "--clients": clients = value
            case "--python": python = value
            case "--flood-seconds": floodSeconds = Double(value) ?? floodSeconds
            case "--load-clients": loadClients = Int(value) ?? loadClients
            case "--load-operations": loadOperations = Int(value) ?? loadOperations
            case "--load-seconds": loadSeconds = Double(value) ?? loadSeconds
            default: Self.fail("unknown option \(word)")
            }
        }
    }

    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("keychain-bench: \(message)\n".utf8))
        exit(2)
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--store-worker", arguments.count == 3, let count = Int(arguments[2]) {
    exit(Workload.storeWorker(id: arguments[1], count: count))
}
if arguments == ["--serve-floor"] { FloorService.serve() }
if arguments == ["--serve-stand-in"] { StandInService.serve() }
if arguments.first == "--serve-no-work", arguments.count == 2, let mode = NoWorkProvider.Mode(rawValue: arguments[1]) {
    NoWorkProvider.serve(mode, secret: Workload(options: Options([])).secret(0))
}
let lookupsOnly = arguments.first == "--lookups" ? Int(arguments.dropFirst().first ?? "") : nil
let options = Options(lookupsOnly == nil ? arguments : [])
do {
    let workload = Workload(options: options)
    let report = try options.memory.map { try MemoryScenarios(options: options).run($0) }
        ?? lookupsOnly.map(workload.lookupsOnly(count:)) ?? workload.run()
    let data = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys, .prettyPrinted])
    FileHandle.standardOutput.write(data + Data("\n".utf8))
} catch {
    FileHandle.standardError.write(Data("keychain-bench: \(error)\n".utf8))
    exit(1)
}
