import FoundationEssentials
import KeychainCore
import SecretCrypto
import SecretStore

/// Every check of a password or a PIN against a keyring, and every other key derivation,
/// whatever asked for it: the unlock prompt, the gnome-keyring extension, `AddMember`,
/// `SetPin`, the TPM enrolment, imports, the login socket, the PIN.
///
/// - One queue: one derivation runs at a time, in the order asked, and each attempt sees the
///   wait that the wrong ones before it earned. Attempts started at once cannot race past the
///   throttle, and guessing costs no more CPU than one derivation at a time.
/// - One throttle per keyring (``PasswordThrottle``), whatever the route: the waits double
///   from 1 s to 60 s after each wrong password or PIN.
/// - The derivation (Argon2id, about 150 ms at the standard cost) runs on a thread of its own
///   (``OffLoop``): other clients are served meanwhile.
/// - The login's own password, which only root's PAM stack can send (``Origin/rootLogin``),
///   neither waits nor counts: someone else's guesses never refuse the person's login.
final class PasswordChecks {
    /// Who hands the password over.
    enum Origin {
        /// A client on the bus, a prompt, or a process of the user on the login socket.
        case client
        /// The login: root's PAM stack (sshd, login, `su` run by root, a display manager) on the
        /// login socket, as the kernel vouches for it (the sender's real uid is 0). It is what
        /// the person typed at a login that PAM accepted (pam_secretd.so runs after pam_unix):
        /// guessing through it means guessing through sshd or login, at their pace, or being
        /// root. So it neither waits nor counts against the keyring's budget.
        case rootLogin
    }

    /// Attempts that may wait for their turn; more are refused at once (`LimitsExceeded`).
    static let maximumWaiting = 32

    private let keyring: Keyring
    private let offLoop: OffLoop
    private var throttle: PasswordThrottle
    private var waiting: [Job] = []
    private var running = false

    /// One derivation waiting for its turn.
    private struct Job {
        /// At its turn, on the main loop: does the work and calls `finished` once (at once when
        /// there is nothing to derive).
        let start: (_ finished: @escaping () -> Void) -> Void
        /// When it cannot wait for its turn.
        let refuse: () -> Void
        /// Who asked: the keyring's accessor while it starts and finishes.
        let accessor: Accessor
    }

    /// Checks over `keyring`'s store, on `clock`'s time; derivations run through `offLoop`.
    /// Wrong passwords and PINs are published as refusals (``Keyring/refused(_:)``).
    init(keyring: Keyring, clock: @escaping () -> Date, offLoop: OffLoop) {
        self.keyring = keyring
        self.offLoop = offLoop
        throttle = PasswordThrottle(now: clock)
    }

    /// Seconds until a client may try `collection` again; 0 when it may now.
    func wait(for collection: Store.CollectionRecord) -> TimeInterval {
        throttle.wait(for: collection.id)
    }

    // MARK: - Passwords

    /// Opens `collection` with `password` in its turn: `completion` gets its item keys, or
    /// `AccessDenied` when the password is wrong or the wait after earlier wrong ones runs.
    /// `purpose` ends the log line of a wrong password.
    func open(
        _ collection: Store.CollectionRecord, with password: SecureBytes, origin: Origin, purpose: String = "",
        completion: @escaping (Result<Store.ItemKeys, SecretServiceError>) -> Void
    ) {
        enqueue(refuse: { completion(.failure(Self.tooManyWaiting)) }) { [self] finished in
            if origin == .client, let refusal = throttled(collection.id) {
                completion(.failure(refusal))
                return finished()
            }
            let lock: PasswordLock
            do throws(StoreError) {
                lock = try keyring.store.passwordLock(of: collection)
            } catch {
                completion(.failure(SecretServiceError(storeFailure: error)))
                return finished()
            }
            runOffLoop({ Result { () throws(StoreError) in try lock.open(with: password) } }) { [self] opened in
                defer { finished() }
                switch opened {
                case .success(let master):
                    do throws(StoreError) {
                        let keys = try keyring.store.unlock(collection, master: master)
                        throttle.succeeded(collection.id)
                        completion(.success(keys))
                    } catch {
                        completion(.failure(SecretServiceError(storeFailure: error)))
                    }
                case .failure(.wrongPassword):
                    if origin == .client {  // the login's own is logged by the login socket's handler
                        let count = throttle.failed(collection.id)
                        Log.warning("wrong password for the \(collection.name) keyring (attempt \(count))\(purpose)")
                    }
                    keyring.refused(AccessRefusal(route: "password", reason: "the password is wrong\(purpose)", collection: collection))
                    completion(.failure(.accessDenied("the password is wrong")))
                case .failure(let error):
                    completion(.failure(SecretServiceError(storeFailure: error)))
                }
            }
        }
    }

    // MARK: - The PIN

    /// Opens `collection` (the login keyring) with the PIN of `slot` in its turn, with the same
    /// waits as its password: `completion` gets its master key, or why not. A wrong PIN counts
    /// against the slot too; the last allowed one ends it.
    func open(
        _ collection: Store.CollectionRecord, withPIN pin: SecureBytes, slot: QuickUnlock,
        completion: @escaping (Result<SecureBytes, SecretServiceError>) -> Void
    ) {
        enqueue(refuse: { completion(.failure(Self.tooManyWaiting)) }) { [self] finished in
            if let refusal = throttled(collection.id, what: "PINs or passwords") {
                completion(.failure(refusal))
                return finished()
            }
            guard let attempt = slot.attempt() else {
                completion(.failure(.notSupported("no PIN is set; unlock with the password")))
                return finished()
            }
            runOffLoop({ attempt.open(with: pin) }) { [self] opened in
                defer { finished() }
                switch slot.record(attempt, opened: opened) {
                case .success(let master):
                    throttle.succeeded(collection.id)
                    completion(.success(master))
                case .failure(.wrongPIN(let left)):
                    let count = throttle.failed(collection.id)
                    Log.warning("wrong PIN for the \(collection.name) keyring (attempt \(count), \(left) left)")
                    keyring.refused(AccessRefusal(route: "PIN", reason: "the PIN is wrong", collection: collection))
                    completion(.failure(.accessDenied("the PIN is wrong; \(left) \(left == 1 ? "try" : "tries") left")))
                case .failure(.exhausted):
                    _ = throttle.failed(collection.id)
                    Log.warning("\(QuickUnlock.allowedFailures) wrong PINs: the PIN no longer unlocks the \(collection.name) keyring, only its password")
                    keyring.refused(AccessRefusal(route: "PIN", reason: "the PIN is wrong; the PIN is gone", collection: collection))
                    completion(.failure(.accessDenied("too many wrong PINs; the PIN is gone, unlock with the password")))
                case .failure(.noPIN):
                    completion(.failure(.notSupported("no PIN is set; unlock with the password")))
                }
            }
        }
    }

    // MARK: - Derivations that check nothing

    /// Runs `work`, a key derivation that checks no password (a new keyring's key, a new
    /// wrapping, a PIN slot), in its turn off the main loop; `completion` gets its value on the
    /// loop, or `LimitsExceeded` when too many wait.
    func derive<T>(_ work: @escaping @Sendable () -> T, completion: @escaping (Result<T, SecretServiceError>) -> Void) {
        enqueue(refuse: { completion(.failure(Self.tooManyWaiting)) }) { [self] finished in
            runOffLoop(work) { value in
                completion(.success(value))
                finished()
            }
        }
    }

    /// Runs `work` off the main loop, then `done` on it for the accessor who asked (the
    /// keyring's now), so that what `done` changes is theirs, once no write off the loop is in
    /// progress (what it unlocks or re-wraps is written on the loop).
    private func runOffLoop<T>(_ work: @escaping @Sendable () -> T, done: @escaping (T) -> Void) {
        let accessor = keyring.accessor
        offLoop.run(named: "secretd-kdf", work) { [keyring] value in
            keyring.apartWrites.whenWriteEnds { keyring.acting(as: accessor) { done(value) } }
        }
    }

    // MARK: - The queue

    private static let tooManyWaiting = SecretServiceError.limitsExceeded("too many password checks are waiting; try again later")

    /// The refusal while `collectionID` waits after wrong passwords, if it does.
    private func throttled(_ collectionID: Int64, what: String = "passwords") -> SecretServiceError? {
        let wait = throttle.wait(for: collectionID)
        guard wait > 0 else { return nil }
        return .accessDenied("too many wrong \(what); try again in \(Int(wait.rounded(.up))) s")
    }

    private func enqueue(refuse: @escaping () -> Void, start: @escaping (_ finished: @escaping () -> Void) -> Void) {
        guard waiting.count < Self.maximumWaiting else { return refuse() }
        waiting.append(Job(start: start, refuse: refuse, accessor: keyring.accessor))
        startNext()
    }

    /// Starts the next job unless one runs; a job that finishes at once lets the next start
    /// in this loop, not in a deeper call.
    private func startNext() {
        while !running, !waiting.isEmpty {
            running = true
            var finishedAtOnce = false
            var inStart = true
            // Strong on purpose: the closure lives only until the job finishes, and a weak
            // reference would give this long-lived object a side table that LeakSanitizer
            // cannot trace (`make leaks` reports it).
            let job = waiting.removeFirst()
            keyring.acting(as: job.accessor) {
                job.start { [self] in
                    if inStart {
                        finishedAtOnce = true
                    } else {
                        running = false
                        startNext()
                    }
                }
            }
            inStart = false
            if finishedAtOnce { running = false }
        }
    }
}
