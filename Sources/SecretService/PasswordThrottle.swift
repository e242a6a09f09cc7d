import FoundationEssentials
import Glibc

/// The waits after wrong passwords. Each source (a collection, tried from pam_secretd.so's
/// socket or by a client on the bus) waits after its own wrong passwords: a login whose
/// password does not open the keyring (it was changed without the old one) must not make the
/// user's own unlock right after it wait. The waits double from 1 s up to 60 s; a right
/// password ends both of its collection's.
struct PasswordThrottle {
    /// Where an attempt came from.
    struct Source: Hashable {
        /// The collection tried.
        var collectionID: Int64
        /// From pam_secretd.so's socket (true) or from a client on the bus.
        var fromLogin: Bool
    }

    /// The longest wait, in seconds.
    static let longestWait = 60.0

    private var failures: [Source: (count: Int, notBefore: Date)] = [:]
    /// The clock the waits run on (``PasswordClock`` in secretd; a test's own in tests).
    private let now: () -> Date

    /// A throttle on `now`'s clock.
    init(now: @escaping () -> Date = PasswordClock.now) {
        self.now = now
    }

    /// Seconds until `source` may try again; 0 when it may now.
    func wait(for source: Source) -> TimeInterval {
        max(0, failures[source]?.notBefore.timeIntervalSince(now()) ?? 0)
    }

    /// Records a wrong password from `source`; returns how many it has had in a row.
    mutating func failed(_ source: Source) -> Int {
        let count = (failures[source]?.count ?? 0) + 1
        failures[source] = (count, now().addingTimeInterval(min(Self.longestWait, pow(2.0, Double(count - 1)))))
        return count
    }

    /// Records the right password for `collectionID`: neither source waits any more.
    mutating func succeeded(collectionID: Int64) {
        for fromLogin in [false, true] { failures[Source(collectionID: collectionID, fromLogin: fromLogin)] = nil }
    }
}
