// The GLib main loop secretd runs on: timers, signals, file descriptor watches and calls from
// other threads. The only file of the daemon, with SDBus+MainLoop.swift, that calls GLib.

internal import CGio
import Dispatch
import Glibc

/// The main loop's thread: everything the daemon does runs there, one thing at a time.
enum MainLoop {
    nonisolated(unsafe) private static var loop: OpaquePointer?

    /// Runs after every timer, watch and cross-thread call, so that what they wrote is
    /// committed like a method call's writes (set by ``BusServer``).
    nonisolated(unsafe) static var afterEachCallback: (() -> Void)?

    /// Runs the loop until SIGTERM, SIGINT or ``quit()``.
    static func run() {
        let mainLoop = g_main_loop_new(nil, 0)!
        loop = mainLoop
        let quit: GSourceFunc = { loop in
            g_main_loop_quit(OpaquePointer(loop))
            return 0
        }
        g_unix_signal_add(SIGTERM, quit, UnsafeMutableRawPointer(mainLoop))
        g_unix_signal_add(SIGINT, quit, UnsafeMutableRawPointer(mainLoop))
        g_main_loop_run(mainLoop)
    }

    /// Stops ``run()``.
    static func quit() {
        if let loop { g_main_loop_quit(loop) }
    }

    /// Runs `body` each time the process receives `signal` (such as SIGHUP).
    static func onSignal(_ signal: Int32, _ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()  // lives for the process
        g_unix_signal_add(signal, { data in
            Unmanaged<Box<() -> Void>>.fromOpaque(data!).takeUnretainedValue().value()
            MainLoop.afterEachCallback?()
            return 1  // G_SOURCE_CONTINUE
        }, box)
    }

    /// Runs `body` once after `seconds`.
    static func after(seconds: Double, _ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Box<() -> Void>({
            body()
            MainLoop.afterEachCallback?()
        })).toOpaque()
        g_timeout_add_full(
            G_PRIORITY_DEFAULT, UInt32(max(0, seconds * 1000)),
            { data in
                Unmanaged<Box<() -> Void>>.fromOpaque(data!).takeUnretainedValue().value()
                return 0
            }, box, { data in Unmanaged<Box<() -> Void>>.fromOpaque(data!).release() })
    }

    /// Runs `body` on the loop's next turn, after the sources ready now (calls waiting are
    /// served first), without committing afterwards as timers do: for loop work cut into turns.
    static func nextTurn(_ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Box<() -> Void>(body)).toOpaque()
        g_timeout_add_full(
            G_PRIORITY_DEFAULT, 0,
            { data in
                Unmanaged<Box<() -> Void>>.fromOpaque(data!).takeUnretainedValue().value()
                return 0
            }, box, { data in Unmanaged<Box<() -> Void>>.fromOpaque(data!).release() })
    }

    /// Runs `body` once the loop has nothing else to do (after every call queued before it).
    static func whenIdle(_ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Box<() -> Void>(body)).toOpaque()
        g_idle_add_full(
            G_PRIORITY_DEFAULT_IDLE,
            { data in
                Unmanaged<Box<() -> Void>>.fromOpaque(data!).takeUnretainedValue().value()
                return 0
            }, box, { data in Unmanaged<Box<() -> Void>>.fromOpaque(data!).release() })
    }

    /// Calls `body` whenever `fd` is readable, hung up or in error, until `body` returns false
    /// or ``removeWatch(_:)`` is called with the id returned here.
    @discardableResult
    static func watch(fd: Int32, _ body: @escaping () -> Bool) -> UInt32 {
        let box = Unmanaged.passRetained(Box<() -> Bool>({
            let keep = body()
            MainLoop.afterEachCallback?()
            return keep
        })).toOpaque()
        let condition = GIOCondition(rawValue: G_IO_IN.rawValue | G_IO_HUP.rawValue | G_IO_ERR.rawValue)
        return g_unix_fd_add_full(
            G_PRIORITY_DEFAULT, fd, condition,
            { _, _, data in Unmanaged<Box<() -> Bool>>.fromOpaque(data!).takeUnretainedValue().value() ? 1 : 0 },
            box, { data in Unmanaged<Box<() -> Bool>>.fromOpaque(data!).release() })
    }

    /// Stops a watch of ``watch(fd:_:)``.
    static func removeWatch(_ id: UInt32) {
        g_source_remove(id)
    }

    /// Runs `body` on the loop and waits for its result; for threads other than the loop's
    /// (prompt conversations). Never call it from the loop itself.
    static func onMainLoop<T>(_ body: @escaping () -> T) -> T {
        var result: T?
        let call = CrossThreadCall {
            result = body()
            MainLoop.afterEachCallback?()  // a prompt's writes are committed like any call's
        }
        g_idle_add_full(
            G_PRIORITY_DEFAULT,
            { data in
                Unmanaged<CrossThreadCall>.fromOpaque(data!).takeUnretainedValue().run()
                return 0
            }, Unmanaged.passRetained(call).toOpaque(), { data in Unmanaged<CrossThreadCall>.fromOpaque(data!).release() })
        call.done.wait()
        return result!
    }

    /// Starts `start` on the loop and waits until it hands its completion a value (on the loop,
    /// now or later): for threads other than the loop's (prompt conversations) that need
    /// something the loop works out without blocking (a password check). Never call it from
    /// the loop itself.
    static func awaiting<T>(_ start: @escaping (_ completion: @escaping (T) -> Void) -> Void) -> T {
        let answer = Answer<T>()
        onMainLoop {
            start { value in
                guard answer.value == nil else { return }
                answer.value = value
                answer.done.signal()
            }
        }
        answer.done.wait()
        return answer.value!
    }

    private final class Answer<T>: @unchecked Sendable {
        var value: T?
        let done = DispatchSemaphore(value: 0)
    }

    private final class CrossThreadCall: @unchecked Sendable {
        let body: () -> Void
        let done = DispatchSemaphore(value: 0)
        init(_ body: @escaping () -> Void) { self.body = body }
        func run() {
            body()
            done.signal()
        }
    }

    /// A Swift value behind a C callback's user data.
    final class Box<Value> {
        let value: Value
        init(_ value: Value) { self.value = value }
    }
}
