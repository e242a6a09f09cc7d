import Glibc
import KeychainCore

/// When a collection's `Items` goes out to the clients that watch it (Announcer): at once
/// for a write after a quiet spell, else at most once per ``interval``, one list for all the
/// writes in between. Each list is a walk of the collection and a message as long as the
/// collection, per watching client: sent for every write, 1,500 stores with one Seahorse open
/// cost 6 to 20 ms of secretd's CPU each at 2,500 to 14,000 items, against 0.3 ms without it.
/// `ItemCreated` and `ItemDeleted` still go out with every write, before its reply, and libsecret
/// keeps its cached `Items` up to date from them in between.
final class ItemsSchedule {
    /// The shortest time between two lists of one collection, in seconds.
    static let interval = 0.25

    private var lastSent: [Int64: Double] = [:]
    private var waiting: [Int64: Set<String>] = [:]

    /// Which of `names` get collection `collectionID`'s list now; the others wait, and `later`
    /// is the delay after which ``takeWaiting(_:)`` must be called (nil when a call is already
    /// due, or none is needed).
    func request(_ collectionID: Int64, for names: Set<String>) -> (now: Set<String>, later: Double?) {
        guard !names.isEmpty else { return ([], nil) }
        if waiting[collectionID] != nil {
            waiting[collectionID]!.formUnion(names)
            return ([], nil)
        }
        let now = MonotonicClock.seconds
        let since = now - (lastSent[collectionID] ?? -.infinity)
        if since >= Self.interval {
            lastSent[collectionID] = now
            return (names, nil)
        }
        waiting[collectionID] = names
        return ([], Self.interval - since)
    }

    /// The clients waiting for collection `collectionID`'s list, which is sent to them now.
    func takeWaiting(_ collectionID: Int64) -> Set<String> {
        lastSent[collectionID] = MonotonicClock.seconds
        return waiting.removeValue(forKey: collectionID) ?? []
    }

    /// Forgets a deleted collection.
    func forget(_ collectionID: Int64) {
        lastSent[collectionID] = nil
        waiting[collectionID] = nil
    }

}
