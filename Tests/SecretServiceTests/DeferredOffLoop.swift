@testable import SecretService

/// Off-loop work (key derivations, sealing) kept in order until the test runs it, so that what
/// happens meanwhile is the test's choice; ``offLoop`` is what the daemon is given.
final class DeferredOffLoop: @unchecked Sendable {
    /// The work waiting, each with what runs on the loop after it.
    var pending: [(() -> Void, () -> Void)] = []

    /// The loop's next turns waiting (``OffLoop/nextTurn(_:)``), oldest first.
    var turns: [() -> Void] = []

    /// An ``OffLoop`` that keeps its work and its next turns here.
    var offLoop: OffLoop {
        OffLoop(start: { [self] _, work, done in pending.append((work, done)) }, nextTurn: { [self] body in turns.append(body) })
    }

    /// Runs the oldest turn waiting.
    func runTurn() { turns.removeFirst()() }

    /// Runs the turns waiting, then the oldest work, until neither is left.
    func runAll() {
        while !turns.isEmpty || !pending.isEmpty {
            if turns.isEmpty { runNext() } else { runTurn() }
        }
    }

    /// Runs the turns waiting until none is left.
    func runTurns() { while !turns.isEmpty { runTurn() } }

    /// Runs the oldest work, then `meanwhile` (what the loop does before it hears the work
    /// ended), then what follows the work on the loop.
    func runNext(meanwhile: () -> Void = {}) {
        let (work, done) = pending.removeFirst()
        work()
        meanwhile()
        done()
    }
}
