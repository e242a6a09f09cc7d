import Dispatch
import Glibc
import Synchronization

/// Ends a pinentry conversation from another thread: the person's answer is no longer wanted
/// (the client that asked disconnected, or dismissed its prompt).
///
/// Pass one to ``Pinentry/ask(program:_:cancellation:receive:)`` or
/// ``Pinentry/choose(program:title:description:ok:notOK:cancel:cancellation:)`` and call
/// ``cancel()`` from any thread: the pinentry process gets `SIGTERM` (and `SIGKILL` two seconds
/// later if it is still there), its dialog closes, and the conversation returns as cancelled.
/// Cancelling before the conversation starts makes it return at once without starting pinentry.
public final class PinentryCancellation: Sendable {
    private struct State {
        var cancelled = false
        /// The pinentry process while it runs and has not been reaped (so its id cannot have
        /// been reused by another process).
        var pid: pid_t?
    }

    private let state = Mutex(State())

    /// A cancellation that has not been requested.
    public init() {}

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Ends the conversation: signals its pinentry process, if one runs.
    public func cancel() {
        let pid = state.withLock { state -> pid_t? in
            state.cancelled = true
            return state.pid
        }
        guard let pid else { return }
        kill(pid, SIGTERM)
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(2)) { [self] in
            // Still not reaped after two seconds: it ignores SIGTERM. The lock keeps the
            // process from being reaped (and its id reused) between the check and the kill.
            state.withLock { state in
                if state.pid == pid { kill(pid, SIGKILL) }
            }
        }
    }

    /// Records the running pinentry; returns false when the conversation was cancelled already
    /// (the process has then been signalled).
    func started(_ pid: pid_t) -> Bool {
        let cancelled = state.withLock { state -> Bool in
            state.pid = pid
            return state.cancelled
        }
        if cancelled { kill(pid, SIGTERM) }
        return !cancelled
    }

    /// Waits for the pinentry process to exit, then reaps it. The process is forgotten while
    /// it is still a zombie, so a late ``cancel()`` can never signal a process that reused its id.
    func reap(_ pid: pid_t) {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
        state.withLock { $0.pid = nil }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
