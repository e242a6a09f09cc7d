import SecretStore

/// Where large items are decoded, sealed and written: off the main loop (``OffLoop``), one at
/// a time in the order asked (the next seal beside the write before), so that one client's
/// large writes do not hold the others up for copying their secret into locked memory (or
/// decrypting it), sealing, encoding, page copies and sync, and a client sending many cannot
/// start a thread for each. An item's secret is
/// decoded and the item sealed first; back on the loop, what was checked when it was asked for
/// is checked again, and its row is then written through the store's second connection
/// (``ApartWriter``) off the loop too, or on the loop (``CollectionObject``).
final class SealingQueue {
    /// Items from this size on (secret, label and attributes: ``ItemContents/byteCount``) are
    /// sealed and written here; smaller ones cost less than the hand-over.
    static let threshold = 32 * 1024

    /// What follows a seal, decided on the loop: nothing, or a write off the loop and then
    /// what follows it on the loop (``write(_:thenInTurns:)``; ``ApartWriteStep`` makes it for
    /// item rows).
    enum AfterSealing {
        case finished
        /// Starts the write through the queue's ``OffLoop``; what follows it on the loop runs
        /// `ended` once it has ended.
        case writing(_ start: (_ offLoop: OffLoop, _ ended: @escaping () -> Void) -> Void)

        /// `write` off the loop, then `done` with what it returned on the loop, which calls
        /// `finished` once it has ended (on a later turn of the loop, if it likes): until then
        /// the write counts as in progress (``ApartWriteGate/isWriting``).
        static func write<Written>(
            _ write: @escaping @Sendable () -> Written, thenInTurns done: @escaping (Written, _ finished: @escaping () -> Void) -> Void
        ) -> AfterSealing {
            .writing { offLoop, ended in
                offLoop.run(named: "secretd-write", write) { written in done(written, ended) }
            }
        }
    }

    /// Opened while a write runs off the loop (it may hold the database's write lock: the
    /// loop's own writes then wait for it to end).
    private let gate: ApartWriteGate
    private let offLoop: OffLoop
    /// The seals asked for and not started, each started with what takes its outcome.
    private var waiting: [(_ sealed: @escaping (_ decide: @escaping () -> AfterSealing) -> Void) -> Void] = []
    /// Whether a seal runs.
    private var sealing = false
    /// The seal ended and not yet taken on: what decides, on the loop, what follows it.
    private var sealed: [() -> AfterSealing] = []
    /// Whether what follows a seal (its decision, its write, what follows that on the loop) is
    /// in progress.
    private var following = false

    /// A queue whose work runs through `offLoop`, its writes shown by `gate`.
    init(offLoop: OffLoop, gate: ApartWriteGate) {
        self.offLoop = offLoop
        self.gate = gate
    }

    /// Runs `work` (a decode and ``Store/seal(_:as:in:keys:)``) off the loop after those asked
    /// before it, then `done` with its result on the loop once what followed the seal before
    /// has ended; the write `done` may ask for runs off the loop before the next item's
    /// `done`. The next item's seal may run meanwhile (one seal, one write at a time), so that
    /// a batch's seal does not wait for the write before it.
    func seal<Sealed>(_ work: @escaping @Sendable () -> Sealed, then done: @escaping (Sealed) -> AfterSealing) {
        waiting.append { [offLoop] sealed in offLoop.run(named: "secretd-seal", work) { result in sealed { done(result) } } }
        startSeal()
    }

    /// Starts the next seal, unless one runs or one ended waits for what follows the one before.
    private func startSeal() {
        guard !sealing, sealed.isEmpty, !waiting.isEmpty else { return }
        let start = waiting.removeFirst()
        sealing = true
        start { [self] decide in
            sealing = false
            sealed.append(decide)
            follow()
        }
    }

    /// Takes on the seal that ended, unless what follows the one before is in progress.
    private func follow() {
        guard !following, !sealed.isEmpty else { return }
        let decide = sealed.removeFirst()
        following = true
        switch decide() {
        case .finished:
            followed()
        case .writing(let write):
            gate.began()
            write(offLoop) { [self] in
                gate.ended()
                followed()
            }
            startSeal()  // beside the write
        }
    }

    private func followed() {
        following = false
        follow()
        startSeal()
    }
}
