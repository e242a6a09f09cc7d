import Foundation

/// Latencies of one phase, in milliseconds.
struct Samples {
    private(set) var values: [Double] = []

    init(_ values: [Double] = []) { self.values = values }

    /// Adds `other`'s samples to these.
    mutating func add(_ other: Samples) { values += other.values }

    /// Times `body` and records it; returns its result.
    mutating func time<T>(_ body: () throws -> T) rethrows -> T {
        let start = DispatchTime.now().uptimeNanoseconds
        let result = try body()
        values.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000)
        return result
    }

    /// The value below which `fraction` of the samples lie (nearest rank).
    func percentile(_ fraction: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((Double(sorted.count) * fraction).rounded(.up)) - 1
        return sorted[min(sorted.count - 1, max(0, rank))]
    }

    var median: Double { percentile(0.5) }
    var p99: Double { percentile(0.99) }

    /// `{"count", "median_ms", "p99_ms"}` for the JSON report.
    var summary: [String: Any] { ["count": values.count, "median_ms": round3(median), "p99_ms": round3(p99)] }

    /// The first or last `count` samples as their own phase.
    func slice(first: Bool, _ count: Int) -> Samples {
        var part = Samples()
        part.values = first ? Array(values.prefix(count)) : Array(values.suffix(count))
        return part
    }
}

/// `value` rounded to three decimals, for readable JSON.
func round3(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
