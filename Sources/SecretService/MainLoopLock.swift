import Glibc

/// The lock that lets GDBus's worker thread answer some reads itself (GIO+QuickReads.swift)
/// without ever running at the same time as the main loop.
///
/// The main loop's thread takes it when the ``BusServer`` is created and holds it from then on,
/// except while the main loop waits in poll (``BusServer/runMainLoop()`` installs a poll
/// function that lets go of it around `poll`). So everything the daemon does on its main loop
/// is under it without saying so. Other threads only ever try it (``tryLock()``) and never wait
/// for it: GDBus's thread must stay free to deliver the replies the main loop waits for.
///
/// So nothing the main loop runs may iterate the default main context itself: a nested loop
/// would poll, and let go of the lock, in the middle of a call. (Synchronous bus calls are
/// fine: GDBus waits for them on a context of its own, with the lock held.)
final class MainLoopLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// An unlocked lock.
    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Takes the lock, waiting for it (the main loop's thread only).
    func lock() { pthread_mutex_lock(mutex) }

    /// Lets go of the lock.
    func unlock() { pthread_mutex_unlock(mutex) }

    /// Takes the lock if nobody holds it; false at once otherwise.
    func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }
}
