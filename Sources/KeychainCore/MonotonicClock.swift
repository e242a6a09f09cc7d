import Glibc

/// Seconds on the clock that never goes back (CLOCK_MONOTONIC), for timing waits and throttles.
public enum MonotonicClock {
    /// Now, in seconds since an arbitrary start (the boot).
    public static var seconds: Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
