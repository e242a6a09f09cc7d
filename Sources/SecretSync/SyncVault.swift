public import SecretCrypto

/// One machine's view of a synced keyring: the vault it belongs to, the vault keys it was
/// given, which version of each item it holds, and the latest version it has seen of each item
/// from each device. secretd keeps it with the keyring (sealed under its master key); this
/// type only holds it.
public struct SyncVault: Sendable {
    /// The vault's id.
    public let id: [UInt8]
    /// This machine.
    public let identity: SyncIdentity
    /// The vault key generations this machine was given.
    public var keys: [UInt32: SecureBytes] = [:]
    /// When each generation began (the first: at zero): a version sealed with a generation
    /// whose successor had begun before the version's own time is a removed device's.
    public var starts: [UInt32: SyncTimestamp] = [:]
    /// The header of the version this machine holds, by item id (hex).
    public var current: [String: SyncHeader] = [:]
    /// The latest timestamp seen of each item (hex) from each device (hex), for replays.
    public var seen: [String: [String: SyncTimestamp]] = [:]
    /// This machine's hybrid logical clock.
    public var clock: HybridLogicalClock
    /// The remote's commit (hex) the last round merged against and left every item file of
    /// (but those in ``unsettled``) holding the version in ``current``: the next round reads
    /// only the files changed since. nil: unknown, the next round reads every file.
    public var base: String?
    /// The item files the last round left on the remote although they do not hold the version
    /// this machine holds (refused, sealed with a key it was not given, not written back): every
    /// round reads them again, as it reads the files changed since ``base``.
    public var unsettled: Set<String> = []
    /// The item files (hex) whose entry (``current``, ``seen``) changed since the caller last
    /// kept them: it keeps those entries (``encodedEntry(_:)``) and empties this, so that a
    /// round writes what it changed, not the whole state.
    public var touched: Set<String> = []

    /// Makes `header` the version this machine holds of its item.
    mutating func hold(_ header: SyncHeader) {
        current[header.fileName] = header
        touched.insert(header.fileName)
    }

    /// Records that the version of item `name` from `device` (hex) at `time` was seen.
    mutating func see(_ name: String, from device: String, at time: SyncTimestamp) {
        seen[name, default: [:]][device] = time
        touched.insert(name)
    }

    /// The newest key generation this machine has (0: none yet, still waiting for approval).
    public var generation: UInt32 { keys.keys.max() ?? 0 }

    /// A machine's state in vault `id`, knowing nothing yet.
    public init(id: [UInt8], identity: SyncIdentity, clock: HybridLogicalClock) {
        self.id = id
        self.identity = identity
        self.clock = clock
    }

    /// Stamps a local change of item `item` (hex; nil: a new item, which gets a random id):
    /// the header its version will carry. Stamped when the change is made, so that a change
    /// made offline competes with the others by when it was made, not by when it was synced.
    public mutating func stamp(item: String?, deleted: Bool) -> SyncHeader {
        let id = item.flatMap(SyncIDs.bytes(hex:)) ?? SyncIDs.random()
        return SyncHeader(vault: self.id, item: id, timestamp: clock.tick(), device: identity.device.id, deleted: deleted,
                          keyGeneration: generation)
    }

    // MARK: - The repository's layout

    /// The file naming the vault.
    static let vaultFile = "vault"
    /// The folder of item files.
    static let itemsFolder = "items"
    /// The folder of approved devices.
    static let devicesFolder = "devices"
    /// The folder of devices waiting for approval.
    static let pendingFolder = "pending"
    /// The folder of one key generation's wrapped keys.
    static func keysFolder(_ generation: UInt32) -> String { "keys/\(generation)" }
    /// The first bytes of the vault file.
    static let vaultMagic = Array("secretd sync vault\n".utf8) + [1]
}

extension SyncIDs {
    /// The 16 bytes `hex` stands for; nil when it is not 32 hex digits.
    public static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 32 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 32, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}
