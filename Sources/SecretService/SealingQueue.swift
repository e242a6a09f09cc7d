import SecretStore

/// Where large items are decoded, sealed and written: off the main loop (``OffLoop``), in the
/// order asked, so that one client's large writes do not hold the others up for copying their
/// secret into locked memory (or decrypting it), sealing, encoding, page copies and sync, and a
/// client sending many cannot start a thread for each. An item's secret is decoded and the item
/// sealed first, one seal at a time; back on the loop, what was checked when it was asked for is
/// checked again, and its row is then written through the store's second connection
/// (``ApartWriter``) off the loop too, or on the loop (``CollectionObject``), one write at a time.
/// The next item is sealed while one is written (one sealed item waits for the writer at most);
/// its check on the loop waits until the write before has ended, so it sees what that wrote.
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
    /// The seals asked for and not started, each started with what is to run after it.
    private var waiting: [(_ sealed: @escaping (_ after: @escaping () -> AfterSealing) -> Void) -> Void] = []
    /// What follows the seal that has ended and waits for the writer: the check on the loop,
    /// which says what to write.
    private var sealed: (() -> AfterSealing)?
    private var sealing = false
    /// Whether a write, from its check on the loop to what follows it there, is in progress.
    private var writing = false

    /// A queue whose work runs through `offLoop`, its writes shown by `gate`.
    init(offLoop: OffLoop, gate: ApartWriteGate) {
        self.offLoop = offLoop
        self.gate = gate
    }

    /// Runs `work` (a decode and ``Store/seal(_:as:in:keys:)``) off the loop after those asked
    /// before it, then, once the write before it has ended, `done` with its result on the loop;
    /// the write `done` may ask for runs off the loop while the next item is sealed.
    func seal<Sealed>(_ work: @escaping @Sendable () -> Sealed, then done: @escaping (Sealed) -> AfterSealing) {
        waiting.append { [offLoop] next in offLoop.run(named: "secretd-seal", work) { result in next { done(result) } } }
        advance()
    }

    /// Starts what may start: the sealed item's check and write when no write is in progress,
    /// and the next seal when no seal runs and no sealed item waits.
    private func advance() {
        if !writing, let after = sealed {
            sealed = nil
            writing = true
            switch after() {
            case .finished:
                writing = false
            case .writing(let write):
                gate.began()
                write(offLoop) { [self] in
                    gate.ended()
                    writing = false
                    advance()
                }
            }
        }
        if !sealing, sealed == nil, !waiting.isEmpty {
            let start = waiting.removeFirst()
            sealing = true
            start { [self] after in
                sealing = false
                sealed = after
                advance()
            }
        }
    }
}
