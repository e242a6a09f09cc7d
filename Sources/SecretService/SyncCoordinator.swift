import FoundationEssentials
import SecretStore
import SecretSync

/// Sync between a person's machines, glued to the keyring: it follows the keyring's events
/// (a local change is stamped when it is made and starts a round soon; an unlock starts one; a
/// lock forgets the sync state's keys; a deleted keyring stops syncing), runs one operation at a
/// time on each synced keyring's clone, the rounds on a thread of their own, and writes what
/// arrived through the keyring. The Sync1 calls are in `SyncCoordinator+Calls.swift`, the rounds
/// in `SyncCoordinator+Rounds.swift`.
///
/// It keeps in memory, per synced collection, its hybrid logical clock (kept through locks; its
/// times are in the repository's clear headers anyway), its sync state while it is unlocked,
/// and whether a round is running or due. Runs on the main loop's thread only.
final class SyncCoordinator {
    /// One synced collection's runtime state.
    struct Run {
        /// Stamps local changes as they are made.
        var clock: HybridLogicalClock
        /// The opened sync state (keys included); nil while the collection is locked.
        var vault: SyncVault?
        /// Whether a round or another operation uses the clone.
        var running = false
        /// Whether another round is wanted once this one is over.
        var again = false
        /// The latest timer that asked for a round; an older one that fires does nothing.
        var timer = 0
        /// The files the last round refused, as messages.
        var refused: [String] = []
        /// Whether the collection may hold items that may sync and never did (after a start, a
        /// stamp that failed, before a joining machine's approval): the next round with keys
        /// looks for them, which walks every item; the other rounds do not.
        var unsyncedMayExist = true
        /// Operations on the clone waiting for the one that uses it (``exclusively(_:_:)``).
        var queued: [() -> Void] = []
        /// Callers waiting for a round (`sync now`): the next one to start answers them (one
        /// already running may have started before the change they want published).
        var waiting: [(Result<Outcome, SecretServiceError>) -> Void] = []
    }

    /// What a round did, for `secretctl sync now`.
    struct Outcome: Sendable {
        var published = 0
        var received = 0
        var conflicts = 0
        var refused: [String] = []
    }

    /// The keyring whose collections sync.
    let keyring: Keyring
    /// Where the clones live (its `sync/`).
    let dataDirectory: URL
    /// Seconds between the rounds of an unlocked synced keyring (`sync-interval`).
    let interval: Int
    /// The synced collections' runs, by collection id.
    var runs: [Int64: Run] = [:]
    /// True while versions that arrived are written: those are not local changes.
    var applyingArrived = false
    /// How many restores replaced the store since start: a round that began before the latest
    /// one writes nothing of what it brought (``restored()``).
    var restores = 0

    /// How long after a local change its round starts, so that a burst of writes is one round.
    static let debounce = 2.0

    /// The wall clock in milliseconds, as the hybrid logical clocks read it.
    static let wallClock: @Sendable () -> UInt64 = { UInt64(max(0, Date().timeIntervalSince1970 * 1000)) }

    /// A coordinator for `keyring`'s synced collections; nothing runs before ``start()``.
    init(keyring: Keyring, dataDirectory: URL, interval: Int) {
        self.keyring = keyring
        self.dataDirectory = dataDirectory
        self.interval = interval
    }

    /// The database: the items through the keyring, and sync's own tables (settings, state,
    /// changes, ids, history), which only this coordinator writes.
    var store: Store { keyring.store }

    /// Follows the keyring from now on, loads the synced collections and starts their rounds;
    /// when secretd serves.
    func start() {
        keyring.subscribe { [weak self] event in self?.follow(event) }
        startSyncing()
    }

    /// What a change to the keyring means for sync.
    private func follow(_ event: KeyringEvent) {
        switch event {
        case .itemCreated(let item, let collection, _, _), .itemChanged(_, let item, _, _, let collection):
            noteLocalChange(item, in: collection, deleted: false)
        case .itemDeleted(let item, let collection, _, _):
            noteLocalChange(item, in: collection, deleted: true)
        case .collectionDeleted(let collection):
            runs[collection.id] = nil
        case .unlocked(let collection):
            if runs[collection.id] != nil { scheduleRound(collection.id, after: 0) }
        case .locked(let collection):
            runs[collection.id]?.vault = nil
        case .restored:
            restored()
        case .collectionCreated, .collectionRelabelled, .secretRead, .refused:
            break
        }
    }
}
