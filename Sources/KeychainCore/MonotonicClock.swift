/// Seconds on a clock that never goes back (CLOCK_MONOTONIC, Swift's `SuspendingClock` on
/// Linux), for timing waits and throttles.
public enum MonotonicClock {
    /// The instant ``seconds`` counts from: the first time it is asked.
    private static let origin = SuspendingClock.now

    /// Now, in seconds since an arbitrary start; only differences mean anything.
    public static var seconds: Double {
        let elapsed = origin.duration(to: SuspendingClock.now).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }
}
