// io.github.secretd.QuickUnlock1
//
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
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   let (password, _) = try provider.decodeSecret(call.argument(0), from: call.sender).get()
                   let (pin, _) = try provider.decodeSecret(call.argument(1), from: call.sender).get()
                   QuickUnlockObject(provider).setPIN(pin, password: password) { reply($0.map { .tuple([]) }) }
               }),
        Method(name: "ClearPin", rule: .unconfined, results: [Argument(name: "was_set", type: "b")],
               handler: .later { provider, _, reply throws(SecretServiceError) in
                   let wasSet = provider.quickUnlock.collectionID != nil
                   provider.quickUnlock.clear()
                   if wasSet { Log.info("cleared the PIN of the login keyring") }
                   reply(.success(.tuple([.boolean(wasSet)])))
               }),
        Method(name: "UnlockWithPin", rule: .unconfined, arguments: [Argument(name: "pin", type: secret)],
               handler: .later { provider, call, reply throws(SecretServiceError) in
                   let (pin, _) = try provider.decodeSecret(call.argument(0), from: call.sender).get()
                   provider.unlockWithPIN(pin) { reply($0.map { .tuple([]) }) }
               }),
        Method(name: "GetPinStatus", rule: .unconfined, results: [Argument(name: "set", type: "b"), Argument(name: "tries_left", type: "u")],
               handler: .later { provider, _, reply throws(SecretServiceError) in
                   reply(.success(.tuple([.boolean(provider.quickUnlock.collectionID != nil), .uint32(UInt32(provider.quickUnlock.triesLeft))])))
               }),
    ])
}

/// secretd's QuickUnlock1 interface: the login keyring's PIN, set with the password and
/// used to unlock.
struct QuickUnlockObject {
    /// What every object shares.
    let provider: Provider

    /// The object over `provider`.
    init(_ provider: Provider) { self.provider = provider }

    /// Sets the PIN of the login keyring, once `password` proves the person knows its password
    /// (through the keyring's throttle): whoever sits at an unlocked session must not be able
    /// to choose a PIN of their own.
    fileprivate func setPIN(_ pin: SecureBytes, password: SecureBytes, completion: @escaping (Result<Void, SecretServiceError>) -> Void) {
        guard KeychainLimits.pinLength.contains(pin.count) else {
            return completion(.failure(.invalidArgs(
                "a PIN has \(KeychainLimits.pinLength.lowerBound) to \(KeychainLimits.pinLength.upperBound) characters")))
        }
        guard let login = try? provider.keyring.collection(named: Provider.loginName) else {
            return completion(.failure(.failed("there is no login keyring to set a PIN for")))
        }
        provider.checkPassword(password, of: login, purpose: " (setting a PIN)") { [weak provider = provider] checked in
            guard let provider else { return }
            guard case .success(let itemKeys) = checked, let master = itemKeys.master else {
                if case .failure(let refusal) = checked { return completion(.failure(refusal)) }
                return completion(.failure(.isLocked("the keyring is locked")))
            }
            let parameters = provider.quickUnlock.pinParameters
            provider.passwordChecks.derive({ try? QuickUnlock.sealing(master, under: pin, collectionID: login.id, parameters: parameters) }) {
                [weak provider = provider] sealed in
                guard let provider else { return }
                switch sealed {
                case .failure(let refusal): completion(.failure(refusal))
                case .success(nil): completion(.failure(.failed("cannot seal the PIN slot")))
                case .success(let slot?):
                    provider.quickUnlock.set(slot)
                    Log.info("set a PIN for the login keyring (in memory until secretd stops)")
                    completion(.success(()))
                }
            }
        }
    }
}
