// Keyrings unlocked, created and given new passwords: every password goes through
// PasswordChecks (one throttle per keyring, derivations off the main loop).

import KeychainCore
import FoundationEssentials
import Glibc
import SecretCrypto
import SecretStore
import DBusValues

extension Provider {
    /// What SetAlias and CreateCollection tell a client whose alias ``SecretServiceNames/isAliasName(_:)`` refuses.
    static let aliasRule = "an alias is 1 to 64 ASCII letters, digits or _, and not session"

    /// Unlocks `collection` with `password` through ``PasswordChecks`` (one throttle per
    /// keyring, the derivation off the main loop); `completion` runs on the main loop. An
    /// unlocked collection stays as it is.
    func unlock(
        _ collection: Store.CollectionRecord, password: SecureBytes, origin: PasswordChecks.Origin = .client,
        completion: @escaping (Result<Void, SecretServiceError>) -> Void
    ) {
        if !keyring.isLocked(collection) { return completion(.success(())) }
        passwordChecks.open(collection, with: password, origin: origin) { [weak self] result in
            guard let self else { return }
            completion(result.map { key in
                guard self.keyring.isLocked(collection) else { return }  // unlocked meanwhile
                self.keyring.unlocked(collection, with: key)
                Log.info("unlocked the \(collection.name) keyring")
            })
        }
    }

    /// Re-wraps `collection`'s master key under `new` once `old` opens it (both derivations off
    /// the main loop, the first through the keyring's throttle).
    func changePassword(
        of collection: Store.CollectionRecord, from old: SecureBytes, to new: SecureBytes,
        completion: @escaping (Result<Void, SecretServiceError>) -> Void
    ) {
        guard new.count > 0 else { return completion(.failure(.invalidArgs("the new password is empty"))) }
        passwordChecks.open(collection, with: old, origin: .client, purpose: " (changing its password)") { [weak self] opened in
            switch opened {
            case .failure(let refusal): completion(.failure(refusal))
            case .success(let itemKeys): self?.rewrap(collection, keys: itemKeys, to: new, completion: completion)
            }
        }
    }

    /// Wraps the master key of `keys` (`collection`'s, unlocked) under `password`, the
    /// derivation off the main loop; the store then holds the new wrapping.
    func rewrap(
        _ collection: Store.CollectionRecord, keys itemKeys: Store.ItemKeys, to password: SecureBytes,
        completion: @escaping (Result<Void, SecretServiceError>) -> Void
    ) {
        guard let master = itemKeys.master else { return completion(.failure(.isLocked("the keyring is locked"))) }
        let (parameters, uuid) = (options.kdf, collection.uuid)
        passwordChecks.derive({ Result { () throws(StoreError) in
            try WrappedKey(wrapping: master, under: password, parameters: parameters, uuid: uuid)
        } }) { [weak self] derived in
            guard let self else { return }
            completion(derived.flatMap { made in
                made.mapError { SecretServiceError(storeFailure: $0) }.flatMap { wrapped in
                    do {
                        try self.keyring.setWrappedKey(of: collection, to: wrapped)
                        // A password set since root's change wins over it.
                        if self.loginKeyring.passwordSetByRoot?.collectionID == collection.id { self.loginKeyring.passwordSetByRoot = nil }
                        Log.info("changed the password of the \(collection.name) keyring")
                        return .success(())
                    } catch {
                        return .failure(self.storeFailure(error))
                    }
                }
            })
        }
    }

    /// Checks `password` against `collection`'s through ``PasswordChecks`` without unlocking
    /// it: its item keys, for what needs them (a PIN, a TPM slot, a policy change).
    func checkPassword(
        _ password: SecureBytes, of collection: Store.CollectionRecord, purpose: String = "",
        completion: @escaping (Result<Store.ItemKeys, SecretServiceError>) -> Void
    ) {
        passwordChecks.open(collection, with: password, origin: .client, purpose: purpose, completion: completion)
    }

    /// Seconds until a client may try a password on `collection` again.
    func unlockDelay(_ collection: Store.CollectionRecord) -> TimeInterval {
        passwordChecks.wait(for: collection)
    }

    /// Creates an unlocked collection with a name made from `label` (its key derived off the
    /// main loop); `completion` gets its path.
    func createCollection(label: String, password: SecureBytes, completion: @escaping (Result<String, SecretServiceError>) -> Void) {
        guard label.utf8.count <= KeychainLimits.textSize else { return completion(.failure(.invalidArgs("the label is too long"))) }
        guard password.count > 0 else { return completion(.failure(.invalidArgs("a new keyring needs a password"))) }
        let parameters = options.kdf
        passwordChecks.derive({ Result { () throws(StoreError) in try NewCollectionKey(password: password, parameters: parameters) } }) {
            [weak self] derived in
            guard let self else { return }
            completion(derived.flatMap { made in
                made.mapError { SecretServiceError(storeFailure: $0) }.flatMap { self.createCollection(label: label, key: $0) }
            })
        }
    }

    /// The D-Bus error for any error thrown by the store.
    func storeFailure(_ error: any Error) -> SecretServiceError {
        storeFailure(error as? StoreError ?? .crypto("unexpected error"))
    }

    /// The D-Bus error for a store failure; the detail is logged, not sent.
    func storeFailure(_ error: StoreError) -> SecretServiceError {
        SecretServiceError(storeFailure: error)
    }

    /// Creates an unlocked collection with a name made from `label` and a key made beforehand.
    private func createCollection(label: String, key: NewCollectionKey) -> Result<String, SecretServiceError> {
        do {
            var name = ObjectPaths.name(fromLabel: label)
            var suffix = 2
            while try keyring.collection(named: name) != nil {
                name = ObjectPaths.name(fromLabel: label) + "_\(suffix)"
                suffix += 1
            }
            let (collection, _) = try keyring.createCollection(name: name, label: label, key: key)
            return .success(ObjectPaths.collection(collection.name))
        } catch {
            return .failure(storeFailure(error))
        }
    }

    /// Unlocks the login keyring with `pin` through ``PasswordChecks``: a wrong PIN waits as a
    /// wrong password does, and the last allowed wrong PIN ends the slot.
    func unlockWithPIN(_ pin: SecureBytes, completion: @escaping (Result<Void, SecretServiceError>) -> Void) {
        guard let collectionID = quickUnlock.collectionID,
            let login = ((try? keyring.collections()) ?? []).first(where: { $0.id == collectionID })
        else { return completion(.failure(.notSupported("no PIN is set; unlock with the password"))) }
        guard keyring.isLocked(login) else { return completion(.success(())) }
        passwordChecks.open(login, withPIN: pin, slot: quickUnlock) { [weak self] opened in
            guard let self else { return }
            completion(opened.flatMap { master in
                guard self.keyring.isLocked(login) else { return .success(()) }
                guard let itemKeys = try? Store.ItemKeys(master: master) else { return .failure(.failed("cannot derive the keyring's keys")) }
                self.keyring.unlocked(login, with: itemKeys)
                Log.info("unlocked the \(login.name) keyring with the PIN")
                return .success(())
            })
        }
    }

    /// Whether the unlock prompt for `collection` asks for the PIN first.
    func asksForPIN(_ collection: Store.CollectionRecord) -> Bool {
        quickUnlock.collectionID == collection.id
    }
}
