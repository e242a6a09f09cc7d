import SecretStore

/// Where large items are sealed before they are written: off the main loop (``OffLoop``), one
/// at a time in the order asked, so that one client's large writes do not hold the others up
/// for their sealing and encoding, and a client sending many cannot start a thread for each.
/// The item's row is then written on the loop (``CollectionObject``).
final class SealingQueue {
    /// Secrets from this size on are sealed here; smaller ones cost less than the hand-over.
    static let threshold = 256 * 1024

    private let offLoop: OffLoop
    private var waiting: [(work: @Sendable () -> Result<Store.SealedItem, StoreError>, done: (Result<Store.SealedItem, StoreError>) -> Void)] = []
    private var running = false

    /// A queue whose sealing runs through `offLoop`.
    init(offLoop: OffLoop) { self.offLoop = offLoop }

    /// Runs `work` (a ``Store/seal(_:as:in:keys:)``) off the loop after those asked before it,
    /// then `done` with its result on the loop.
    func seal(_ work: @escaping @Sendable () -> Result<Store.SealedItem, StoreError>, then done: @escaping (Result<Store.SealedItem, StoreError>) -> Void) {
        waiting.append((work, done))
        startNext()
    }

    private func startNext() {
        guard !running, !waiting.isEmpty else { return }
        let (work, done) = waiting.removeFirst()
        running = true
        offLoop.run(named: "secretd-seal", work) { [self] result in
            running = false
            done(result)
            startNext()
        }
    }
}
