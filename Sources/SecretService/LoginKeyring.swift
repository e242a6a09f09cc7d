import FoundationEssentials
import SecretCrypto
import SecretStore

/// The login keyring and the login password pam_secretd.so hands over (LoginControlSocket).
/// Every decision about the login keyring at login and at `passwd` is made here; the module
/// only passes the password. Nothing here logs a password.
///
/// Who may do what on the socket (secretd(1), LOGIN): the kernel says whether root's PAM stack
/// sent a request (``PasswordChecks/Origin/rootLogin``) or a process of the user did.
/// - UNLOCK: anyone may unlock with the keyring's password (a process of the user through the
///   keyring's throttle, as on the bus); only root's PAM stack creates the login keyring.
/// - CHANGE with the old password: anyone who knows it (checked through the throttle).
/// - CHANGE without the old password (root running `passwd USER`): root's PAM stack only.
final class LoginKeyring {
    /// What the objects share (unowned: the provider holds this).
    private unowned let provider: Provider
    /// The login password root set without the old one while the login keyring was locked: the
    /// keyring takes it when it is next unlocked. In memory only.
    var passwordSetByRoot: (collectionID: Int64, password: SecureBytes)?

    /// The login keyring of `provider`'s store.
    init(provider: Provider) { self.provider = provider }

    /// Answers one request through `reply` behind the ``CommitBarrier``: its writes are
    /// committed first, so a login keyring re-wrapped under a new password is on disk when
    /// `passwd` finishes.
    func handle(
        _ request: LoginControlRequest, origin: PasswordChecks.Origin, reply: @escaping (LoginControlResult) -> Void
    ) {
        provider.lastActivity = provider.clock()  // a login is use: lock-after-idle counts from here
        if case .ping = request {} else {
            Log.info("the login socket: \(request.operationName) from \(origin == .rootLogin ? "root's PAM stack" : "a process of the user")")
        }
        let committed = { [weak self] (result: LoginControlResult) in
            guard let self else { return reply(result) }
            // Committed at once (a login is rare and waits on it), in order with the replies
            // the bus server holds.
            let barrier = self.provider.commitBarrier
            if barrier.deliver(CommitBarrier.Held(send: { reply(result) }, fail: { _ in reply(.failed) })) { barrier.flush() }
        }
        let accessor = Accessor(identity: origin == .rootLogin ? "pam_secretd" : "login socket (a process of the user)")
        provider.keyring.acting(as: accessor) {
            switch request {
            case .ping: reply(.ok)
            case .unlock(let password): open(with: password, origin: origin, completion: committed)
            case .change(let old, let new): change(from: old, to: new, origin: origin, completion: committed)
            }
        }
    }

    /// Unlocks the login keyring with the login password, or creates it (with the `default`
    /// alias) when there is none and root's PAM stack sent it. An unlocked keyring stays as it is.
    func open(
        with password: SecureBytes, origin: PasswordChecks.Origin, completion: @escaping (LoginControlResult) -> Void
    ) {
        guard password.count > 0 else {
            Log.warning("an empty login password was handed over; the login keyring is not opened with it")
            return completion(.failed)
        }
        let existing: Store.CollectionRecord?
        do {
            existing = try provider.keyring.collection(named: Provider.loginName)
        } catch {
            Log.error("cannot open the login keyring: \(error)")
            return completion(.failed)
        }
        guard let login = existing else {
            guard origin == .rootLogin else {
                Log.warning("refused to create the login keyring for a process of the user: a login creates it from the login password")
                return completion(.failed)
            }
            return create(password: password) { [weak self] created in
                guard let self else { return }
                // Another login may have created it meanwhile: then this one unlocks it.
                if !created, (try? provider.keyring.collection(named: Provider.loginName)) != nil {
                    return self.open(with: password, origin: origin, completion: completion)
                }
                completion(created ? .ok : .failed)
            }
        }
        provider.unlock(login, password: password, origin: origin) { result in
            switch result {
            case .success:
                completion(.ok)
            case .failure(.accessDenied(let message)):
                if origin == .rootLogin {
                    Log.warning("the login password does not open the login keyring; it stays locked (secretctl unlock opens it "
                                + "with its own password, secretctl passwd then sets the login password)")
                } else {
                    Log.warning("a process of the user could not unlock the login keyring on the login socket: \(message)")
                }
                completion(.denied)
            case .failure:
                completion(.failed)
            }
        }
    }

    /// Creates the login keyring under `password` (its key derived off the main loop),
    /// unlocked, and points `default` at it when no alias does; `completion` says whether it did.
    func create(password: SecureBytes, completion: @escaping (Bool) -> Void) {
        let parameters = provider.options.kdf
        provider.passwordChecks.derive({ Result { () throws(StoreError) in try NewCollectionKey(password: password, parameters: parameters) } }) {
            [weak self] derived in
            guard let self else { return }
            do throws(StoreError) {
                guard case .success(let made) = derived else { return completion(false) }
                try self.create(key: try made.get())
                completion(true)
            } catch {
                Log.error("cannot create the login keyring: \(error)")
                completion(false)
            }
        }
    }

    /// Creates the login keyring under `password`, deriving its key on this thread (at start,
    /// before the daemon serves: `--unlock`, the `login-password` credential).
    func create(password: SecureBytes) throws(StoreError) {
        try create(key: try NewCollectionKey(password: password, parameters: provider.options.kdf))
    }

    /// Creates the login keyring with a key made beforehand, unlocked, and points `default` at
    /// it when no alias does.
    private func create(key: NewCollectionKey) throws(StoreError) {
        let (login, _) = try provider.keyring.createCollection(name: Provider.loginName, label: "Login", key: key)
        if try provider.keyring.aliases()["default"] == nil { try provider.keyring.setAlias("default", to: login) }
        Log.info("created the login keyring")
    }

    /// The login password changed from `old` to `new`: re-wraps the login keyring under `new`
    /// if `old` opens it. `old` is empty when root set the password without it (`passwd USER`),
    /// which only root's PAM stack may send: then an unlocked keyring is re-wrapped at once, and
    /// a locked one keeps `new` in memory and takes it when it is next unlocked (by its previous
    /// password, a PIN or the TPM) while this secretd runs.
    func change(
        from old: SecureBytes, to new: SecureBytes, origin: PasswordChecks.Origin, completion: @escaping (LoginControlResult) -> Void
    ) {
        guard new.count > 0 else { return completion(.failed) }
        let login: Store.CollectionRecord
        do {
            guard let existing = try provider.keyring.collection(named: Provider.loginName) else {
                Log.info("the login password changed before there was a login keyring; the next login creates it")
                return completion(.ok)
            }
            login = existing
        } catch {
            return completion(.failed)
        }
        guard old.count == 0 else {
            return provider.changePassword(of: login, from: old, to: new) { result in
                switch result {
                case .success:
                    Log.info("the login keyring now opens with the new login password")
                    completion(.ok)
                case .failure(.accessDenied):
                    Log.warning("the old login password does not open the login keyring; its password is unchanged")
                    completion(.denied)
                case .failure:
                    completion(.failed)
                }
            }
        }
        guard origin == .rootLogin else {
            Log.warning("refused a login password change without the old password from a process of the user: only root's "
                        + "passwd may set it without the old one; the login keyring's password is unchanged")
            return completion(.failed)
        }
        guard let itemKeys = provider.keyring[login.id] else {
            passwordSetByRoot = (login.id, new)
            Log.warning("the login password was set without the old one while the login keyring was locked: it opens with the "
                        + "previous password until it is next unlocked (secretctl unlock, a PIN or the TPM), then with the new one")
            return completion(.ok)
        }
        provider.rewrap(login, keys: itemKeys, to: new) { result in
            if case .success = result { Log.info("the login keyring now opens with the new login password") }
            completion(result.isSuccess ? .ok : .failed)
        }
    }

    /// Re-wraps `collection` under the login password root set while it was locked, now that it
    /// is unlocked (the keys' unlock event calls this).
    func takePasswordSetByRoot(_ collection: Store.CollectionRecord) {
        guard let (collectionID, password) = passwordSetByRoot, collectionID == collection.id,
            let itemKeys = provider.keyring[collection.id]
        else { return }
        passwordSetByRoot = nil
        provider.rewrap(collection, keys: itemKeys, to: password) { result in
            switch result {
            case .success: Log.info("the login keyring now opens with the login password root set")
            case .failure(let error): Log.error("cannot re-wrap the login keyring under the password root set: \(error.message)")
            }
        }
    }
}

extension Result {
    /// Whether this is a success.
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
