// Quick unlock with a PIN (secretd's QuickUnlock1 interface, and the PIN question of the unlock
// prompt): once the login password has been given, a short PIN opens the login keyring again
// after it locked, until secretd stops, 5 wrong PINs, or the PIN is cleared (QuickUnlock).

import KeychainCore
import SecretCrypto
import SecretStore
import DBusValues

extension Introspection {
    /// secretd's own: quick unlock with a PIN, for unconfined clients outside a sandbox (its
    /// rule); the PIN methods answer once their key derivation, off the main loop, is done.
    static let quickUnlockInterface = BusInterface(name: quickUnlock, objects: .service, methods: [
        Method(name: "SetPin", rule: .unconfined, arguments: [Argument(name: "login_password", type: secret), Argument(name: "pin", type: secret)],
               handler: .later { daemon, call, reply throws(SecretServiceError) in
                   let (password, _) = try daemon.decodeSecret(call.argument(0), from: call.sender).get()
                   let (pin, _) = try daemon.decodeSecret(call.argument(1), from: call.sender).get()
                   daemon.setPIN(pin, password: password) { reply($0.map { .tuple([]) }) }
               }),
        Method(name: "ClearPin", rule: .unconfined, results: [Argument(name: "was_set", type: "b")],
               handler: .later { daemon, _, reply throws(SecretServiceError) in
                   let wasSet = daemon.quickUnlock.collectionID != nil
                   daemon.quickUnlock.clear()
                   if wasSet { Log.info("cleared the PIN of the login keyring") }
                   reply(.success(.tuple([.boolean(wasSet)])))
               }),
        Method(name: "UnlockWithPin", rule: .unconfined, arguments: [Argument(name: "pin", type: secret)],
               handler: .later { daemon, call, reply throws(SecretServiceError) in
                   let (pin, _) = try daemon.decodeSecret(call.argument(0), from: call.sender).get()
                   daemon.unlockWithPIN(pin) { reply($0.map { .tuple([]) }) }
               }),
        Method(name: "GetPinStatus", rule: .unconfined, results: [Argument(name: "set", type: "b"), Argument(name: "tries_left", type: "u")],
               handler: .later { daemon, _, reply throws(SecretServiceError) in
                   reply(.success(.tuple([.boolean(daemon.quickUnlock.collectionID != nil), .uint32(UInt32(daemon.quickUnlock.triesLeft))])))
               }),
    ])
}

extension Provider {
    /// Sets the PIN of the login keyring, once `password` proves the person knows its password
    /// (through the keyring's throttle): whoever sits at an unlocked session must not be able
    /// to choose a PIN of their own.
    fileprivate func setPIN(_ pin: SecureBytes, password: SecureBytes, completion: @escaping (Result<Void, SecretServiceError>) -> Void) {
        guard KeychainLimits.pinLength.contains(pin.count) else {
            return completion(.failure(.invalidArgs(
                "a PIN has \(KeychainLimits.pinLength.lowerBound) to \(KeychainLimits.pinLength.upperBound) characters")))
        }
        guard let login = try? store.collection(named: Self.loginName) else {
            return completion(.failure(.failed("there is no login keyring to set a PIN for")))
        }
        checkPassword(password, of: login, purpose: " (setting a PIN)") { [weak self] checked in
            guard let self else { return }
            guard case .success(let itemKeys) = checked, let master = itemKeys.master else {
                if case .failure(let refusal) = checked { return completion(.failure(refusal)) }
                return completion(.failure(.isLocked("the keyring is locked")))
            }
            let parameters = self.quickUnlock.pinParameters
            self.passwordChecks.derive({ try? QuickUnlock.sealing(master, under: pin, collectionID: login.id, parameters: parameters) }) {
                [weak self] sealed in
                guard let self else { return }
                switch sealed {
                case .failure(let refusal): completion(.failure(refusal))
                case .success(nil): completion(.failure(.failed("cannot seal the PIN slot")))
                case .success(let slot?):
                    self.quickUnlock.set(slot)
                    Log.info("set a PIN for the login keyring (in memory until secretd stops)")
                    completion(.success(()))
                }
            }
        }
    }

    /// Unlocks the login keyring with `pin` through ``PasswordChecks``: a wrong PIN waits as a
    /// wrong password does, and the last allowed wrong PIN ends the slot.
    func unlockWithPIN(_ pin: SecureBytes, completion: @escaping (Result<Void, SecretServiceError>) -> Void) {
        guard let collectionID = quickUnlock.collectionID,
            let login = ((try? store.collections()) ?? []).first(where: { $0.id == collectionID })
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
