// Running the next call of a bulk transfer while the caller handles the one before
// (issue 51, point 6): secretd's work for one batch or page overlaps secretctl's for another.

import Dispatch
import KeychainCore

/// One piece of work started on a thread of its own, with the starting thread's
/// cancellation, whose value the caller takes later with ``value()``.
final class Prefetch<Value>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    /// Written once by the work's thread before `done` is signalled, read after it.
    private var result: Result<Value, KeychainError>?

    /// Starts `work` on a thread named `name` (here and now, when no thread can be had).
    init(named name: String, _ work: @escaping () throws(KeychainError) -> Value) {
        let run = LibSecret.Cancellation.carried { [self] in
            result = Result { () throws(KeychainError) -> Value in try work() }
            done.signal()
        }
        if !DetachedThread.start(named: name, run) { run() }
    }

    /// Waits for the work to end; its value, or its error. Called once.
    func value() throws(KeychainError) -> Value {
        done.wait()
        return try result!.get()
    }
}
