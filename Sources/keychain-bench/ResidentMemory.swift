import Foundation
import KeychainCore

/// A process's resident memory (VmRSS), in KiB, read from /proc without disturbing it: no call
/// reaches the provider, so nothing makes it return freed memory sooner than it would alone.
struct ResidentMemory {
    let pid: Int32

    /// RSS counts as settled once it has moved by at most ``stableKiB`` for ``stableWindow`` s.
    static let stableWindow = 2.0
    static let stableKiB = 64
    /// How often the waits below read it (s).
    static let interval = 0.25

    /// Where RSS came to rest.
    struct Rest {
        /// The last reading (nil: the process was gone).
        var kib: Int?
        /// When, from the start of the wait, the stretch it has not left since began.
        var since: Double?
        /// False when the deadline came first.
        var settled: Bool
    }

    /// Now; nil once the process is gone.
    func kib() -> Int? { ProcessStatus.kibibytes("VmRSS", of: pid) }

    /// Once it has settled, or after `deadline` seconds.
    func settled(deadline: Double = 10) -> Rest {
        watch(from: Self.now(), marks: [], deadline: deadline).rest
    }

    /// What it comes back to after the clients left (at `left`, a ``now()`` reading): the
    /// readings 1 s and 3 s after, and where it settles, `deadline` seconds after at most.
    func afterwards(left: Double, deadline: Double = 15) -> (after1s: Int?, after3s: Int?, rest: Rest) {
        let (rest, marks) = watch(from: left, marks: [1, 3], deadline: deadline)
        return (marks[0], marks[1], rest)
    }

    /// Reads it every ``interval`` from `start` until every mark (seconds from `start`) is read
    /// and it has settled, or until `deadline` seconds from `start`.
    private func watch(from start: Double, marks: [Double], deadline: Double) -> (rest: Rest, marks: [Int?]) {
        var samples: [(time: Double, kib: Int)] = []
        var readings = [Int?](repeating: nil, count: marks.count)
        while let kib = kib() {
            let time = Self.now() - start
            samples.append((time, kib))
            for (index, mark) in marks.enumerated() where readings[index] == nil && time >= mark { readings[index] = kib }
            let since = stableSince(samples)
            let settled = time - since >= Self.stableWindow
            if (settled && !readings.contains(nil)) || time >= deadline {
                return (Rest(kib: kib, since: round3(since), settled: settled), readings)
            }
            Thread.sleep(forTimeInterval: Self.interval)
        }
        return (Rest(kib: samples.last?.kib, since: nil, settled: false), readings)
    }

    /// When the last stretch of `samples` that stays within ``stableKiB`` began.
    private func stableSince(_ samples: [(time: Double, kib: Int)]) -> Double {
        guard let last = samples.last else { return 0 }
        var since = last.time
        var low = last.kib
        var high = last.kib
        for sample in samples.reversed() {
            low = min(low, sample.kib)
            high = max(high, sample.kib)
            guard high - low <= Self.stableKiB else { break }
            since = sample.time
        }
        return since
    }

    /// Starts reading it every 20 ms in the background, until ``PeakWatch/stop()``.
    func watchPeak() -> PeakWatch { PeakWatch(self) }

    /// The highest reading while it watches.
    final class PeakWatch: @unchecked Sendable {
        private let lock = NSLock()
        private var peak = 0
        private var stopped = false
        private let done = DispatchSemaphore(value: 0)

        fileprivate init(_ memory: ResidentMemory) {
            Thread.detachNewThread { [self] in
                while !lock.withLock({ stopped }), let kib = memory.kib() {
                    lock.withLock { peak = max(peak, kib) }
                    Thread.sleep(forTimeInterval: 0.02)
                }
                done.signal()
            }
        }

        /// Stops watching; the highest reading (KiB).
        func stop() -> Int {
            lock.withLock { stopped = true }
            done.wait()
            return lock.withLock { peak }
        }
    }

    /// Seconds on a monotonic clock.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}
