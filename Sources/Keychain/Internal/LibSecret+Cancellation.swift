// Cancelling the blocking libsecret call of an async operation through a GCancellable.

internal import CLibSecret
import KeychainCore
import FoundationEssentials
import Glibc

extension LibSecret {
    // MARK: - Cancellation

    /// A `GCancellable` for the calls of one async operation; cancelling it makes the blocking
    /// libsecret call in progress (or the next one) fail with `.cancelled`, which also closes
    /// an open prompt.
    final class Cancellation: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<GCancellable>

        init() { pointer = g_cancellable_new() }  // transfer full

        deinit { g_object_unref(pointer) }

        /// Cancels; safe from any thread (`g_cancellable_cancel` is thread-safe).
        func cancel() { g_cancellable_cancel(pointer) }

        /// The cancellable of the operation running on this thread, if it was started by
        /// ``run(on:)``; nil for synchronous callers.
        static var current: UnsafeMutablePointer<GCancellable>? {
            pthread_getspecific(threadKey).map { Unmanaged<Cancellation>.fromOpaque($0).takeUnretainedValue().pointer }
        }

        /// `body`, made to run on another thread with this thread's cancellation (if any) as
        /// that thread's own, which it keeps alive until `body` returns.
        static func carried(_ body: @escaping () -> Void) -> () -> Void {
            guard let slot = pthread_getspecific(threadKey) else { return body }
            let cancellation = Unmanaged<Cancellation>.fromOpaque(slot).takeUnretainedValue()
            return {
                pthread_setspecific(threadKey, Unmanaged.passUnretained(cancellation).toOpaque())
                body()
                pthread_setspecific(threadKey, nil)
            }
        }

        /// The thread-specific slot that holds the running operation's cancellation.
        private static let threadKey: pthread_key_t = {
            var key = pthread_key_t()
            precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left")
            return key
        }()

        /// Runs `body` on a new thread named `name` whose libsecret calls use this
        /// cancellation (here, if no thread can be had). The thread keeps it alive until
        /// `body` returns.
        func run(on name: String, _ body: @escaping @Sendable () -> Void) {
            let work = { [self] in
                pthread_setspecific(Self.threadKey, Unmanaged.passUnretained(self).toOpaque())
                body()
                pthread_setspecific(Self.threadKey, nil)
            }
            if !DetachedThread.start(named: name, work) { work() }
        }
    }
}
