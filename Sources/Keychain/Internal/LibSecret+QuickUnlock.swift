// secretd's QuickUnlock interface (a PIN for the login keyring), called over GDBus on
// libsecret's connection; the PIN and the password travel in the encrypted session.

internal import CLibSecret
import DBusValues
import KeychainCore

extension LibSecret {
    /// Calls `method` of secretd's QuickUnlock interface with `encoded` secrets
    /// (``callSecretd(_:_:_:_:encoded:feature:)``).
    private static func callQuickUnlock(
        _ service: UnsafeMutablePointer<SecretService>, _ method: String, encoded: [OpaquePointer] = []
    ) throws(KeychainError) -> [DBusValue] {
        try callSecretd(service, SecretServiceNames.Interface.quickUnlock, method, encoded: encoded, feature: "PINs for quick unlock")
    }

    /// Sets the login keyring's PIN, proven by its `password`.
    static func setPin(_ pin: SecretBuffer, password: SecretBuffer) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            _ = try callQuickUnlock(service, "SetPin", encoded: [try encodedPassword(service, password), try encodedPassword(service, pin)])
        }
    }

    /// Forgets the PIN; false when none was set.
    static func clearPin() throws(KeychainError) -> Bool {
        try withService { service throws(KeychainError) in
            guard let wasSet = try callQuickUnlock(service, "ClearPin").first?.boolean else {
                throw .protocolError(reason: "the reply to ClearPin does not have the declared type")
            }
            return wasSet
        }
    }

    /// Unlocks the login keyring with `pin`.
    static func unlockWithPin(_ pin: SecretBuffer) throws(KeychainError) {
        try withService { service throws(KeychainError) in
            _ = try callQuickUnlock(service, "UnlockWithPin", encoded: [try encodedPassword(service, pin)])
        }
    }

    /// Whether a PIN is set, and how many wrong ones it still takes.
    static func pinStatus() throws(KeychainError) -> (set: Bool, triesLeft: Int) {
        try withService { service throws(KeychainError) in
            let reply = try callQuickUnlock(service, "GetPinStatus")
            guard reply.count == 2, let set = reply[0].boolean, case .uint32(let left) = reply[1] else {
                throw .protocolError(reason: "the reply to GetPinStatus does not have the declared type")
            }
            return (set, Int(left))
        }
    }
}
