// The benchmark client of `make bench` (bench/run.sh starts each provider on a private bus and
// runs this against it). Every operation goes through the Keychain library and libsecret, one
// at a time, as a real client's would. Prints one JSON object (see bench/README.md).
//
// usage: keychain-bench --sizes 100,1000 [--provider-pid PID] [--data-dir DIR] [--password PW]
//                       [--secretctl PATH] [--secret-tool PATH]
//        keychain-bench --store-worker ID COUNT     (one of the concurrent storing clients)
//        keychain-bench --serve-no-work main-loop|worker-thread   (a provider that does no work)
//        keychain-bench --lookups COUNT             (lookups and the round-trip floor only)

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
            default:
                FileHandle.standardError.write(Data("keychain-bench: unknown option \(word)\n".utf8))
                exit(2)
            }
        }
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--store-worker", arguments.count == 3, let count = Int(arguments[2]) {
    exit(Workload.storeWorker(id: arguments[1], count: count))
}
if arguments.first == "--serve-no-work", arguments.count == 2, let mode = NoWorkProvider.Mode(rawValue: arguments[1]) {
    NoWorkProvider.serve(mode, secret: Workload(options: Options([])).secret(0))
}
let lookupsOnly = arguments.first == "--lookups" ? Int(arguments.dropFirst().first ?? "") : nil
let options = Options(lookupsOnly == nil ? arguments : [])
do {
    let workload = Workload(options: options)
    let report = try lookupsOnly.map(workload.lookupsOnly(count:)) ?? workload.run()
    let data = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys, .prettyPrinted])
    FileHandle.standardOutput.write(data + Data("\n".utf8))
} catch {
    FileHandle.standardError.write(Data("keychain-bench: \(error)\n".utf8))
    exit(1)
}
