import KeychainCore
import SecretStore

/// Nothing is acknowledged or announced before the writes before it are durable: replies and
/// signals wait here for the commit of the writes made before them, and the writes of calls
/// that arrive together share one commit (a group commit). The bus server's replies and signals
/// and the login socket's answers all go out through it, in order.
///
/// Runs on the main loop. A transaction stays open from one call to the next while there is
/// something to commit or to send; the barrier commits when the bus server ends a turn with its
/// socket drained (every call that arrived in time to share the commit has been read), when the
/// loop is idle, before more than ``maximumHeld`` replies wait, and at stop.
final class CommitBarrier {
    /// A reply, signal or answer waiting for the writes before it to be committed.
    struct Held {
        /// Sends it.
        var send: () -> Void
        /// What to do instead when the commit failed (a method reply becomes that error); nil:
        /// send it anyway (a reply that reports no write).
        var fail: ((SecretServiceError) -> Void)?
    }

    /// How many replies and signals may wait for one commit before it is forced.
    static let maximumHeld = 256

    /// The store whose writes replies wait for; nil: nothing is ever written (the refusing
    /// service's barrier, which lets everything through).
    private let store: Store?
    private var held: [Held] = []
    private var flushScheduled = false

    /// A barrier before the replies about `store`'s writes.
    init(store: Store?) { self.store = store }

    /// From now on the store's writes stay in an open transaction until the barrier commits
    /// them (before that, at start, each write commits by itself), and a commit only appends
    /// to the write-ahead log: the log is folded into the file off the loop
    /// (``Store/checkpointInBackground()``).
    func holdCommits() {
        store?.groupsCommits = true
        store?.checkpointInBackground()
    }

    /// Whether anything waits: writes not yet committed, or replies held for them.
    var isHolding: Bool { store?.hasPendingCommit == true || !held.isEmpty }

    /// Sends `item` now, or after the commit of the writes before it. While a turn of calls is
    /// being served (`inTurn`), the turn's end flushes (``endTurn(moreToDo:)``); otherwise the
    /// flush waits for the loop to be idle. Returns whether `item` is waiting.
    @discardableResult
    func deliver(_ item: Held, inTurn: Bool = false) -> Bool {
        guard isHolding else {
            item.send()
            return false
        }
        held.append(item)
        if held.count >= Self.maximumHeld {
            flush()
            return false
        }
        if !inTurn { scheduleFlush() }
        return true
    }

    /// Ends a turn of calls. When the socket is drained (`moreToDo` false), the turn's writes
    /// are committed and the replies waiting for them sent at once. Otherwise they wait for the
    /// loop to be idle.
    func endTurn(moreToDo: Bool) {
        if !moreToDo, isHolding {
            flush()
        } else {
            scheduleFlush()
        }
        if !isHolding { store?.renewSnapshotIfCheckpointed() }
    }

    /// Commits after the calls already queued on the main loop have been handled, when there
    /// are writes to commit or replies waiting. A read snapshot alone stays open from turn to
    /// turn: a write turns it into the write transaction (secretd is the file's only writer), and
    /// the reads of the next calls need no new one (two WAL locks and two statements a call).
    func scheduleFlush() {
        guard !flushScheduled, isHolding else { return }
        flushScheduled = true
        MainLoop.whenIdle { [weak self] in
            // A flush at the end of a turn may have come first.
            if let self, flushScheduled { flush() }
        }
    }

    /// Commits the pending writes, then sends what waited for them, in order.
    func flush() {
        flushScheduled = false
        let failure = commit()
        let waiting = held
        held = []
        for item in waiting {
            if let failure, let fail = item.fail { fail(failure) } else { item.send() }
        }
    }

    /// Makes the waiting writes durable and ends the open transaction; when the commit failed
    /// (the writes are rolled back), the error the calls that waited for it get.
    func commit() -> SecretServiceError? {
        guard let store else { return nil }
        do throws(StoreError) {
            try store.commitPending()
            return nil
        } catch {
            Log.error("cannot commit to the database: \(error); the last changes were rolled back")
            switch error {
            case .noSpace, .readOnly: return SecretServiceError(storeFailure: error)
            default: return .incomplete
            }
        }
    }
}
