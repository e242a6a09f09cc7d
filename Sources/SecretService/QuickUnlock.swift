import KeychainCore
import SecretCrypto

/// The login keyring's quick-unlock slot: its master key sealed under a key derived from a PIN
/// (Argon2id, then AES-256-GCM), kept in this process's memory only, never on disk.
///
/// The slot is gone when secretd stops, after ``allowedFailures`` wrong PINs in a row (then
/// only the password opens the keyring), and when it is cleared. It protects against a person
/// at the unlocked session who does not know the PIN once the keyring locks (idle, suspend,
/// screen lock, `secretctl lock`); it does not protect against anyone who can read secretd's
/// memory, who has the master key while the keyring is unlocked anyway.
final class QuickUnlock {
    /// Why a PIN did not open the slot.
    enum Failure: Error, Equatable {
        /// No PIN is set (or it was cleared, or secretd restarted).
        case noPIN
        /// The PIN is wrong; `left` more tries before the slot is gone.
        case wrongPIN(left: Int)
        /// That was the last try: the slot is gone.
        case exhausted
    }

    /// Wrong PINs in a row that end the slot.
    static let allowedFailures = KeychainLimits.pinAttempts

    private struct Slot {
        var collectionID: Int64
        var salt: [UInt8]
        var sealed: SecureBytes
        var failures = 0
    }

    private var slot: Slot?
    /// The Argon2id cost of deriving the PIN's key.
    private let parameters: KDFParameters

    /// An empty slot whose PINs cost `parameters` to try.
    init(parameters: KDFParameters) {
        self.parameters = parameters
    }

    /// The collection whose key the slot holds, while a PIN is set.
    var collectionID: Int64? { slot?.collectionID }

    /// Tries left before the slot is gone (0 when no PIN is set).
    var triesLeft: Int { slot.map { Self.allowedFailures - $0.failures } ?? 0 }

    /// Seals `key` (collection `collectionID`'s master key) under `pin`, replacing any slot.
    func set(pin: SecureBytes, key: SecureBytes, collectionID: Int64) throws(CryptoError) {
        let salt = Gcrypt.randomBytes(count: 16)
        let pinKey = try pin.withBytes { bytes throws(CryptoError) in try Gcrypt.argon2id(password: bytes, salt: salt, parameters: parameters) }
        let sealed = try key.withBytes { bytes throws(CryptoError) in
            try Gcrypt.seal(bytes, key: pinKey, associatedData: Self.associatedData(collectionID))
        }
        slot = Slot(collectionID: collectionID, salt: salt, sealed: SecureBytes(sealed))
    }

    /// The master key, when `pin` is right; a wrong one counts against the slot.
    func open(pin: SecureBytes) -> Result<SecureBytes, Failure> {
        guard var current = slot else { return .failure(.noPIN) }
        let opened: SecureBytes? = try? pin.withBytes { bytes throws(CryptoError) -> SecureBytes in
            let pinKey = try Gcrypt.argon2id(password: bytes, salt: current.salt, parameters: parameters)
            let sealed = current.sealed.withBytes { Array($0) }
            return try Gcrypt.open(sealed, key: pinKey, associatedData: Self.associatedData(current.collectionID))
        }
        if let opened {
            current.failures = 0
            slot = current
            return .success(opened)
        }
        current.failures += 1
        guard current.failures < Self.allowedFailures else {
            slot = nil
            return .failure(.exhausted)
        }
        slot = current
        return .failure(.wrongPIN(left: Self.allowedFailures - current.failures))
    }

    /// Forgets the slot.
    func clear() {
        slot = nil
    }

    /// What the sealed key is bound to: its purpose and its collection.
    private static func associatedData(_ collectionID: Int64) -> [UInt8] {
        Array("secretd quick unlock \(collectionID)".utf8)
    }
}
