import KeychainCore

/// Where slow work runs (a key derivation, a sync round's git commands) so that the main loop
/// keeps serving other clients meanwhile: on a thread of its own, its result handed back to
/// the main loop (``thread``). In-process tests, which run no main loop, run it in place
/// (``inline``).
struct OffLoop: Sendable {
    /// Runs `work` off the loop, then `done` with its result on the loop.
    private let start: @Sendable (_ name: String, _ work: @escaping @Sendable () -> Void, _ done: @escaping () -> Void) -> Void
    /// Runs its body on the loop's next turn.
    private let later: @Sendable (_ body: @escaping () -> Void) -> Void

    /// An off-loop runner that starts each piece of work (named for its thread) with `start`,
    /// which must run `done` on the main loop after `work` (tests keep the work to run it later),
    /// and whose ``nextTurn(_:)`` is `nextTurn` (at once by default).
    init(
        start: @escaping @Sendable (_ name: String, _ work: @escaping @Sendable () -> Void, _ done: @escaping () -> Void) -> Void,
        nextTurn: @escaping @Sendable (_ body: @escaping () -> Void) -> Void = { $0() }
    ) {
        self.start = start
        self.later = nextTurn
    }

    /// A thread of its own per piece of work; `done` runs on the main loop.
    static let thread = OffLoop(start: { name, work, done in
        let back = UncheckedBox(done)
        let started = DetachedThread.start(named: name) {
            work()
            MainLoop.onMainLoop { back.value() }
        }
        if !started {
            Log.error("cannot start a thread for \(name); the work runs on the main loop")
            work()
            done()
        }
    }, nextTurn: { MainLoop.nextTurn($0) })

    /// In place, at once (in-process tests).
    static let inline = OffLoop(start: { _, work, done in
        work()
        done()
    })

    /// Runs `body` on the loop after the calls and other work waiting now: for loop work cut
    /// into turns, so that other clients are served between them. In place in tests.
    func nextTurn(_ body: @escaping () -> Void) { later(body) }

    /// Runs `turn` on `0..<count` cut into slices of `size`, one slice a turn of the loop
    /// (``nextTurn(_:)``), so that other clients are served between slices; then `done`. A turn
    /// that returns false ends it there (it has answered), and `done` does not run.
    func inTurns(_ count: Int, of size: Int, _ turn: @escaping (Range<Int>) -> Bool, then done: @escaping () -> Void) {
        func run(from start: Int) {
            let slice = start..<min(start + size, count)
            guard turn(slice) else { return }
            if slice.upperBound < count { nextTurn { run(from: slice.upperBound) } } else { done() }
        }
        run(from: 0)
    }

    /// Runs `work` off the loop (on a thread called `name`), then `done` with its value on the loop.
    func run<T>(named name: String, _ work: @escaping @Sendable () -> T, done: @escaping (T) -> Void) {
        let result = ResultBox<T>()
        start(name, { result.value = work() }, { done(result.value!) })
    }
}

/// A value handed between the main loop and a worker thread, which never touch it at once.
final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// The result a worker thread leaves for the main loop, which reads it after the worker ends.
private final class ResultBox<Value>: @unchecked Sendable {
    var value: Value?
}
