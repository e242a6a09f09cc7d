// Quick unlock with a PIN (secretd's QuickUnlock1 interface, and the PIN question of the unlock
// prompt): once the login password has been given, a short PIN opens the login keyring again
// after it locked, until secretd stops, 5 wrong PINs, or the PIN is cleared (QuickUnlock).

import KeychainCore
import SecretCrypto
import SecretStore
import DBusValues

extension Daemon {
    func handleQuickUnlock(_ call: MethodCall) -> Result<DBusValue, SecretServiceError> {
        let args = call.arguments
        switch call.method {
        case "SetPin":
            return decodeSecret(args[0], from: call.sender).flatMap { password, _ in
                decodeSecret(args[1], from: call.sender).flatMap { pin, _ in setPIN(pin, password: password) }
            }.map { .tuple([]) }
        case "ClearPin":
            let wasSet = quickUnlock.collectionID != nil
            quickUnlock.clear()
            if wasSet { Log.info("cleared the PIN of the login keyring") }
            return .success(.tuple([.boolean(wasSet)]))
        case "UnlockWithPin":
            return decodeSecret(args[0], from: call.sender).flatMap { pin, _ in unlockWithPIN(pin) }.map { .tuple([]) }
        case "GetPinStatus":
            return .success(.tuple([.boolean(quickUnlock.collectionID != nil), .uint32(UInt32(quickUnlock.triesLeft))]))
        default:
            return .failure(.noSuchObject("no method \(call.method)"))
        }
    }

    /// Sets the PIN of the login keyring, once `password` proves the person knows its password
    /// (with the same waits after wrong passwords as unlocking): whoever sits at an unlocked
    /// session must not be able to choose a PIN of their own.
    private func setPIN(_ pin: SecureBytes, password: SecureBytes) -> Result<Void, SecretServiceError> {
        guard KeychainLimits.pinLength.contains(pin.count) else {
            return .failure(.invalidArgs("a PIN has \(KeychainLimits.pinLength.lowerBound) to \(KeychainLimits.pinLength.upperBound) characters"))
        }
        guard let login = try? store.collection(named: Self.loginName) else {
            return .failure(.failed("there is no login keyring to set a PIN for"))
        }
        return checkPassword(password, of: login, purpose: " (setting a PIN)").flatMap { itemKeys in
            do {
                guard let master = itemKeys.master else { return .failure(.isLocked("the keyring is locked")) }
                try quickUnlock.set(pin: pin, key: master, collectionID: login.id)
            } catch {
                return .failure(.failed("cannot seal the PIN slot"))
            }
            Log.info("set a PIN for the login keyring (in memory until secretd stops)")
            return .success(())
        }
    }

    /// Unlocks the login keyring with `pin`; a wrong PIN waits as a wrong password does, and
    /// the last allowed wrong PIN ends the slot.
    func unlockWithPIN(_ pin: SecureBytes) -> Result<Void, SecretServiceError> {
        guard let collectionID = quickUnlock.collectionID,
            let login = ((try? store.collections()) ?? []).first(where: { $0.id == collectionID })
        else { return .failure(.notSupported("no PIN is set; unlock with the password")) }
        guard isLocked(login) else { return .success(()) }
        let source = PasswordThrottle.Source(collectionID: login.id, fromLogin: false)
        let wait = passwordThrottle.wait(for: source)
        if wait > 0 { return .failure(.accessDenied("too many wrong PINs or passwords; try again in \(Int(wait.rounded(.up))) s")) }
        switch quickUnlock.open(pin: pin) {
        case .success(let master):
            passwordThrottle.succeeded(collectionID: login.id)
            guard let itemKeys = try? Store.ItemKeys(master: master) else { return .failure(.failed("cannot derive the keyring's keys")) }
            keys.unlocked(login, with: itemKeys)
            Log.info("unlocked the \(login.name) keyring with the PIN")
            return .success(())
        case .failure(.wrongPIN(let left)):
            let count = passwordThrottle.failed(source)
            Log.warning("wrong PIN for the \(login.name) keyring (attempt \(count), \(left) left)")
            return .failure(.accessDenied("the PIN is wrong; \(left) \(left == 1 ? "try" : "tries") left"))
        case .failure(.exhausted):
            _ = passwordThrottle.failed(source)
            Log.warning("\(QuickUnlock.allowedFailures) wrong PINs: the PIN no longer unlocks the \(login.name) keyring, only its password")
            return .failure(.accessDenied("too many wrong PINs; the PIN is gone, unlock with the password"))
        case .failure(.noPIN):
            return .failure(.notSupported("no PIN is set; unlock with the password"))
        }
    }

    /// Whether the unlock prompt for `collection` asks for the PIN first.
    func asksForPIN(_ collection: Store.CollectionRecord) -> Bool {
        quickUnlock.collectionID == collection.id
    }
}
