// Measures store and lookup latency through the Keychain library (libsecret → D-Bus →
// provider) as the keyring grows. Run by bench/run.sh against secretd and gnome-keyring.
//
// usage: keychain-bench SIZE [SIZE...]   (sizes in increasing order, e.g. 100 1000 10000)

import Foundation
import Keychain

let sizes = CommandLine.arguments.dropFirst().compactMap { Int($0) }
guard !sizes.isEmpty, sizes == sizes.sorted() else {
    FileHandle.standardError.write(Data("usage: keychain-bench SIZE [SIZE...] (increasing)\n".utf8))
    exit(2)
}
let samples = 200

/// Milliseconds taken by `body`.
func time(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

do {
    // Probes share the filler's service: the realistic worst case, one service with many accounts.
    let filler = try Keychain(service: "bench.filler")
    let probe = filler
    var stored = 0
    print("items\tstore_median_ms\tstore_p95_ms\tlookup_median_ms\tlookup_p95_ms")
    for size in sizes {
        while stored < size {
            try filler.set("secret-\(stored)", for: "account-\(stored)")
            stored += 1
        }
        var storeTimes: [Double] = []
        var lookupTimes: [Double] = []
        for sample in 0..<samples {
            let account = "probe-\(size)-\(sample)"
            storeTimes.append(try time { try probe.set("value-\(sample)", for: account) })
            lookupTimes.append(try time { _ = try probe.string(for: account) })
        }
        // Back to `size` items: drop this round's probes.
        for sample in 0..<samples { try probe.removeValue(for: "probe-\(size)-\(sample)") }
        print(String(format: "%d\t%.2f\t%.2f\t%.2f\t%.2f", size, percentile(storeTimes, 0.5), percentile(storeTimes, 0.95),
                     percentile(lookupTimes, 0.5), percentile(lookupTimes, 0.95)))
    }
} catch {
    FileHandle.standardError.write(Data("keychain-bench: \(error)\n".utf8))
    exit(1)
}
