import FoundationEssentials
import SecretCrypto
import SecretStore

/// What secretd does with the login password pam_secretd.so hands over (LoginControlSocket).
/// Every decision about the login keyring at login and at `passwd` is made here; the module
/// only passes the password. Nothing here logs a password.
extension Daemon {
    /// Answers one request; its writes are committed before the reply goes out, so a login
    /// keyring re-wrapped under a new password is on disk when `passwd` finishes.
    func handleLoginControl(_ request: LoginControlRequest) -> LoginControlResult {
        lastActivity = clock()  // a login is use: lock-after-idle counts from here
        let result: LoginControlResult
        switch request {
        case .ping: return .ok
        case .unlock(let password): result = openLoginKeyring(with: password)
        case .change(let old, let new): result = changeLoginPassword(from: old, to: new)
        }
        guard store.hasPendingCommit else { return result }
        return commitPending() ? result : .failed
    }

    /// Unlocks the login keyring with the login password, or creates it (with the `default`
    /// alias) when there is none. An unlocked keyring stays as it is.
    func openLoginKeyring(with password: SecureBytes) -> LoginControlResult {
        guard password.count > 0 else {
            Log.warning("an empty login password was handed over; the login keyring is not opened with it")
            return .failed
        }
        do {
            guard let login = try store.collection(named: Self.loginName) else {
                try createLoginKeyring(password: password)
                return .ok
            }
            switch unlock(login, password: password, fromLogin: true) {
            case .success: return .ok
            case .failure(.accessDenied):
                Log.warning("the login password does not open the login keyring; it stays locked (secretctl unlock opens it with its own password, secretctl passwd then sets the login password)")
                return .denied
            case .failure: return .failed
            }
        } catch {
            Log.error("cannot open the login keyring: \(error)")
            return .failed
        }
    }

    /// Creates the login keyring, unlocked, under `password`, and points `default` at it when no
    /// alias does; once the daemon serves the bus, the collection is exported and announced.
    func createLoginKeyring(password: SecureBytes) throws(StoreError) {
        let (login, key) = try store.createCollection(
            name: Self.loginName, label: "Login", password: password, parameters: options.kdf)
        keys.unlocked(login, with: key, announcing: false)
        if try store.aliases()["default"] == nil { try store.setAlias("default", to: login) }
        Log.info("created the login keyring")
        guard server != nil else { return }
        announceNewCollection(ObjectPaths.collection(login.name))
    }

    /// The login password changed from `old` to `new`: re-wraps the login keyring under `new`
    /// if `old` opens it. `old` is empty when the password was set without it (root running
    /// `passwd USER`): then the keyring is re-wrapped only if it is unlocked now; a locked one
    /// keeps opening with the previous password, and the log says so.
    func changeLoginPassword(from old: SecureBytes, to new: SecureBytes) -> LoginControlResult {
        guard new.count > 0 else { return .failed }
        let login: Store.CollectionRecord
        do {
            guard let existing = try store.collection(named: Self.loginName) else {
                Log.info("the login password changed before there was a login keyring; the next login creates it")
                return .ok
            }
            login = existing
        } catch {
            return .failed
        }
        let itemKeys: Store.ItemKeys
        if old.count == 0 {
            guard let key = keys[login.id] else {
                Log.warning("the login password was set without the old one while the login keyring was locked: "
                            + "the keyring still opens with the previous password (secretctl unlock, then secretctl passwd)")
                return .failed
            }
            itemKeys = key
        } else {
            switch checkPassword(old, of: login, purpose: " (at a login password change)", fromLogin: true) {
            case .success(let key): itemKeys = key
            case .failure(.accessDenied):
                Log.warning("the old login password does not open the login keyring; its password is unchanged")
                return .denied
            case .failure: return .failed
            }
        }
        do {
            try store.rewrap(login, keys: itemKeys, to: new, parameters: options.kdf)
        } catch {
            Log.error("cannot re-wrap the login keyring: \(error)")
            return .failed
        }
        Log.info("the login keyring now opens with the new login password")
        return .ok
    }
}
