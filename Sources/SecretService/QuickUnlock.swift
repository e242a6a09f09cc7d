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
    /// Changes each time a slot is put in place, so that an attempt at an older one counts for nothing.
    private var generation = 0
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

    /// A PIN slot sealed beforehand (``sealing(_:under:collectionID:parameters:)``, on another
    /// thread), to put in place.
    struct SealedSlot: Sendable {
        fileprivate var collectionID: Int64
        fileprivate var salt: [UInt8]
        fileprivate var sealed: SecureBytes
    }

    /// Seals `key` (collection `collectionID`'s master key) under `pin`; any thread.
    static func sealing(_ key: SecureBytes, under pin: SecureBytes, collectionID: Int64, parameters: KDFParameters)
        throws(CryptoError) -> SealedSlot
    {
        let salt = Gcrypt.randomBytes(count: 16)
        let pinKey = try pin.withBytes { bytes throws(CryptoError) in try Gcrypt.argon2id(password: bytes, salt: salt, parameters: parameters) }
        let sealed = try key.withBytes { bytes throws(CryptoError) in
            try Gcrypt.seal(bytes, key: pinKey, associatedData: Self.associatedData(collectionID))
        }
        return SealedSlot(collectionID: collectionID, salt: salt, sealed: SecureBytes(sealed))
    }

    /// The Argon2id cost of a PIN's key.
    var pinParameters: KDFParameters { parameters }

    /// Puts `sealed` in place, replacing any slot.
    func set(_ sealed: SealedSlot) {
        generation += 1
        slot = Slot(collectionID: sealed.collectionID, salt: sealed.salt, sealed: sealed.sealed)
    }

    /// Seals `key` (collection `collectionID`'s master key) under `pin`, replacing any slot, on
    /// this thread.
    func set(pin: SecureBytes, key: SecureBytes, collectionID: Int64) throws(CryptoError) {
        set(try Self.sealing(key, under: pin, collectionID: collectionID, parameters: parameters))
    }

    /// What trying a PIN needs, taken from the slot on the main loop and used on another
    /// thread (``Attempt/open(with:)``); nil when no PIN is set.
    struct Attempt: Sendable {
        fileprivate let generation: Int
        fileprivate let collectionID: Int64
        fileprivate let salt: [UInt8]
        fileprivate let sealed: SecureBytes
        fileprivate let parameters: KDFParameters

        /// The master key when `pin` is the slot's; nil when it is not. Any thread.
        func open(with pin: SecureBytes) -> SecureBytes? {
            try? pin.withBytes { bytes throws(CryptoError) -> SecureBytes in
                let pinKey = try Gcrypt.argon2id(password: bytes, salt: salt, parameters: parameters)
                let sealedBytes = sealed.withBytes { Array($0) }
                return try Gcrypt.open(sealedBytes, key: pinKey, associatedData: QuickUnlock.associatedData(collectionID))
            }
        }
    }

    /// An attempt at the slot as it is now.
    func attempt() -> Attempt? {
        slot.map { Attempt(generation: generation, collectionID: $0.collectionID, salt: $0.salt, sealed: $0.sealed, parameters: parameters) }
    }

    /// Records how `attempt` went (`opened`: the master key it gave, nil for a wrong PIN); a
    /// wrong PIN counts against the slot. An attempt at a slot that was replaced or cleared
    /// meanwhile counts for nothing and is `noPIN`.
    func record(_ attempt: Attempt, opened: SecureBytes?) -> Result<SecureBytes, Failure> {
        guard var current = slot, attempt.generation == generation else { return .failure(.noPIN) }
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

    /// The master key, when `pin` is right; a wrong one counts against the slot. On this thread.
    func open(pin: SecureBytes) -> Result<SecureBytes, Failure> {
        guard let attempt = attempt() else { return .failure(.noPIN) }
        return record(attempt, opened: attempt.open(with: pin))
    }

    /// Forgets the slot.
    func clear() {
        generation += 1
        slot = nil
    }

    /// What the sealed key is bound to: its purpose and its collection.
    fileprivate static func associatedData(_ collectionID: Int64) -> [UInt8] {
        Array("secretd quick unlock \(collectionID)".utf8)
    }
}
