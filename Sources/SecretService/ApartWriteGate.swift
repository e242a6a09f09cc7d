/// Whether a write through the store's second connection (``ApartWriter``) is in progress,
/// and the loop's own work that waits for it to end. Such a write may hold the database's
/// write lock; a write of the loop's would then wait for it with every client on hold. So
/// what writes on the loop outside a call (a call's own write is answered
/// ``SecretServiceError/waitForWrite`` and run again) starts through ``whenWriteEnds(_:)``:
/// the login socket's requests, what follows a key derivation, a prompt's outcome, the audit
/// trail's flush, the SSH agent's requests.
///
/// Owned by the ``Keyring``, so every subsystem reaches it; opened and closed by the
/// ``SealingQueue``, which starts every apart write. Main loop only.
final class ApartWriteGate {
    /// Whether an apart write is in progress (from its start until what follows it on the loop
    /// has finished).
    private(set) var isWriting = false
    private var waiting: [() -> Void] = []

    /// Runs `body` on the loop once the apart write in progress has ended, or at once if none is.
    func whenWriteEnds(_ body: @escaping () -> Void) {
        if isWriting { waiting.append(body) } else { body() }
    }

    /// An apart write starts.
    func began() { isWriting = true }

    /// The apart write has ended: runs what waited for it, in the order it came.
    func ended() {
        isWriting = false
        let waited = waiting
        waiting = []
        for body in waited { body() }
    }
}
