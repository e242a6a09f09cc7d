import FoundationEssentials
import SecretSync

/// What secretd holds in memory about each synced collection, by collection id: its hybrid
/// logical clock (kept through locks; its times are in the repository's clear headers anyway),
/// its sync state while it is unlocked, and whether a round is running or due.
final class SyncRuns {
    /// One synced collection's runtime state.
    struct Run {
        /// Stamps local changes as they are made.
        var clock: HybridLogicalClock
        /// The opened sync state (keys included); nil while the collection is locked.
        var vault: SyncVault?
        /// Whether a round is running (off the main loop).
        var running = false
        /// Whether another round is wanted once this one is over.
        var again = false
        /// The latest timer that asked for a round; an older one that fires does nothing.
        var timer = 0
        /// The files the last round refused, as messages.
        var refused: [String] = []
        /// Operations on the clone waiting for the one that uses it (Daemon+Sync's `exclusively`).
        var queued: [() -> Void] = []
        /// Callers waiting for the running round (`sync now`).
        var waiting: [(Result<SyncRuns.Outcome, SecretServiceError>) -> Void] = []
    }

    /// What a round did, for `secretctl sync now`.
    struct Outcome: Sendable {
        var published = 0
        var received = 0
        var conflicts = 0
        var refused: [String] = []
    }

    /// The synced collections' runs.
    var runs: [Int64: Run] = [:]
    /// True while secretd writes versions that arrived: those are not local changes.
    var applyingArrived = false

    /// The wall clock in milliseconds, as the hybrid logical clocks read it.
    static let wallClock: @Sendable () -> UInt64 = { UInt64(max(0, Date().timeIntervalSince1970 * 1000)) }
}
