import FoundationEssentials
import Glibc

/// The waits after wrong passwords and PINs: one budget per keyring, whatever route the
/// attempts took (prompts, the gnome-keyring extension, AddMember, SetPin, the TPM enrolment,
/// the login socket, the PIN). The waits double from 1 s up to 60 s; the right password ends
/// them. ``PasswordChecks`` is the only user: it checks the wait before each attempt, and the
/// login's own password (from root's PAM stack) neither waits nor counts (see there why).
struct PasswordThrottle {
    /// The longest wait, in seconds.
    static let longestWait = 60.0

    private var failures: [Int64: (count: Int, notBefore: Date)] = [:]
    /// The clock the waits run on (``PasswordClock`` in secretd; a test's own in tests).
    private let now: () -> Date

    /// A throttle on `now`'s clock.
    init(now: @escaping () -> Date = PasswordClock.now) {
        self.now = now
    }

    /// Seconds until collection `collectionID` may be tried again; 0 when it may now.
    func wait(for collectionID: Int64) -> TimeInterval {
        max(0, failures[collectionID]?.notBefore.timeIntervalSince(now()) ?? 0)
    }

    /// Records a wrong password or PIN for `collectionID`; returns how many it has had in a row.
    mutating func failed(_ collectionID: Int64) -> Int {
        let count = (failures[collectionID]?.count ?? 0) + 1
        failures[collectionID] = (count, now().addingTimeInterval(min(Self.longestWait, pow(2.0, Double(count - 1)))))
        return count
    }

    /// Records the right password for `collectionID`: it no longer waits.
    mutating func succeeded(_ collectionID: Int64) {
        failures[collectionID] = nil
    }
}
