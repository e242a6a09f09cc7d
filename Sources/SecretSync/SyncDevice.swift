public import SecretCrypto

/// A machine of the vault: its random id and its X25519 public key, as the repository lists it
/// (`devices/ID`). Its private key never leaves it; the vault key reaches it wrapped for that
/// key alone (``SyncKeyWrap``), so each machine opens the vault with a key of its own whatever
/// its login password.
public struct SyncDevice: Equatable, Hashable, Sendable {
    /// The device's id (16 bytes).
    public let id: [UInt8]
    /// Its X25519 public key (32 bytes).
    public let publicKey: [UInt8]

    /// A device with this id and public key.
    public init(id: [UInt8], publicKey: [UInt8]) {
        self.id = id
        self.publicKey = publicKey
    }

    /// The short code both machines show while one approves the other (`123-456`): the first
    /// bits of SHA-256 over the vault, the device and its public key, so that a person who sees
    /// the same code on both screens knows the request in the repository is that machine's,
    /// not one the remote's host put there.
    public func code(in vault: [UInt8]) -> String {
        let digest = Gcrypt.sha256(Array("secretd sync device code v1".utf8) + vault + id + publicKey)
        let number = digest.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) } % 1_000_000
        let digits = String(number)
        let padded = String(repeating: "0", count: 6 - digits.count) + digits
        return padded.prefix(3) + "-" + padded.suffix(3)
    }

    /// The file that lists the device: magic, id, public key.
    public var entry: [UInt8] { Self.magic + id + publicKey }

    /// The device listed in `bytes` (the file `devices/NAME`).
    public init(entry bytes: [UInt8], fileName: String) throws(SyncError) {
        guard bytes.count == Self.magic.count + 16 + Gcrypt.x25519Length, bytes.starts(with: Self.magic) else {
            throw .malformed("\(fileName) is not a device entry")
        }
        id = Array(bytes[Self.magic.count..<Self.magic.count + 16])
        publicKey = Array(bytes[(Self.magic.count + 16)...])
        guard SyncIDs.hex(id) == fileName else { throw .renamed(file: fileName) }
    }

    private static let magic = Array("secretd sync device\n".utf8) + [1]
}

/// A device's own keys: its id and X25519 key pair, kept by that device only (secretd seals the
/// private key under the keyring's master key).
public struct SyncIdentity: Sendable {
    /// The device as others see it.
    public let device: SyncDevice
    /// Its private key, in secure memory.
    public let privateKey: SecureBytes

    /// A new device: a random id and key pair.
    public static func generate() throws(CryptoError) -> SyncIdentity {
        let privateKey = Gcrypt.randomKey(count: Gcrypt.x25519Length)
        return SyncIdentity(device: SyncDevice(id: SyncIDs.random(), publicKey: try Gcrypt.x25519PublicKey(of: privateKey)), privateKey: privateKey)
    }

    /// The identity with this id and private key (as the device stored them).
    public init(id: [UInt8], privateKey: SecureBytes) throws(CryptoError) {
        self.init(device: SyncDevice(id: id, publicKey: try Gcrypt.x25519PublicKey(of: privateKey)), privateKey: privateKey)
    }

    private init(device: SyncDevice, privateKey: SecureBytes) {
        self.device = device
        self.privateKey = privateKey
    }
}

/// A vault key generation wrapped for one device (`keys/GENERATION/DEVICE`): an ephemeral
/// X25519 public key, then the generation's start (the hybrid logical time it replaced the one
/// before) and the vault key, sealed (AES-256-GCM) under HKDF-SHA256 of the secret that
/// ephemeral key shares with the device's key, bound to the vault, the generation and the
/// device. Only that device's private key opens it, and nobody can change the start.
public enum SyncKeyWrap {
    private static let magic = Array("secretd sync key\n".utf8) + [1]

    /// `vaultKey` (generation `generation` of `vault`, begun at `start`) wrapped for `device`.
    public static func wrap(
        _ vaultKey: SecureBytes, start: SyncTimestamp, generation: UInt32, vault: [UInt8], for device: SyncDevice
    ) throws(SyncError) -> [UInt8] {
        do {
            let ephemeral = Gcrypt.randomKey(count: Gcrypt.x25519Length)
            let ephemeralPublic = try Gcrypt.x25519PublicKey(of: ephemeral)
            let key = try wrappingKey(
                Gcrypt.x25519SharedSecret(ephemeral, peerPublicKey: device.publicKey), ephemeralPublic: ephemeralPublic,
                generation: generation, vault: vault, device: device.id)
            let plaintext = SecureBytes(count: 12 + vaultKey.count)
            plaintext.withMutableBytes { out in
                withUnsafeBytes(of: start.milliseconds.bigEndian) { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 8) }
                withUnsafeBytes(of: start.counter.bigEndian) { out.baseAddress!.advanced(by: 8).copyMemory(from: $0.baseAddress!, byteCount: 4) }
                vaultKey.withBytes { out.baseAddress!.advanced(by: 12).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            }
            let sealed = try plaintext.withBytes { (bytes) throws(CryptoError) in
                try Gcrypt.seal(bytes, key: key, associatedData: magic + ephemeralPublic)
            }
            return magic + ephemeralPublic + sealed
        } catch {
            throw .malformed("cannot wrap the vault key: \(error)")
        }
    }

    /// The vault key in `bytes` and the start of its generation, opened with `identity`'s
    /// private key; `.tampered` when it is not a key wrapped for that device (another device's,
    /// altered, or of another vault or generation).
    public static func unwrap(
        _ bytes: [UInt8], generation: UInt32, vault: [UInt8], identity: SyncIdentity, fileName: String
    ) throws(SyncError) -> (key: SecureBytes, start: SyncTimestamp) {
        guard bytes.count > magic.count + Gcrypt.x25519Length, bytes.starts(with: magic) else {
            throw .malformed("\(fileName) is not a wrapped key")
        }
        let ephemeralPublic = Array(bytes[magic.count..<magic.count + Gcrypt.x25519Length])
        do {
            let key = try wrappingKey(
                Gcrypt.x25519SharedSecret(identity.privateKey, peerPublicKey: ephemeralPublic), ephemeralPublic: ephemeralPublic,
                generation: generation, vault: vault, device: identity.device.id)
            let opened = try Gcrypt.open(Array(bytes[(magic.count + Gcrypt.x25519Length)...]), key: key, associatedData: magic + ephemeralPublic)
            guard opened.count == 12 + Gcrypt.keyLength else { throw SyncError.tampered(file: fileName) }
            let start = opened.withBytes { bytes in
                SyncTimestamp(milliseconds: bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) },
                              counter: bytes[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            }
            let vaultKey = SecureBytes(count: Gcrypt.keyLength)
            vaultKey.withMutableBytes { out in opened.withBytes { out.baseAddress!.copyMemory(from: $0.baseAddress!.advanced(by: 12), byteCount: out.count) } }
            return (vaultKey, start)
        } catch {
            throw .tampered(file: fileName)
        }
    }

    private static func wrappingKey(
        _ shared: SecureBytes, ephemeralPublic: [UInt8], generation: UInt32, vault: [UInt8], device: [UInt8]
    ) throws(CryptoError) -> SecureBytes {
        let info = Array("secretd sync vault key v1".utf8) + vault + withUnsafeBytes(of: generation.bigEndian) { Array($0) } + device
            + ephemeralPublic
        return try Gcrypt.hkdfSHA256(shared, info: info, length: Gcrypt.keyLength)
    }
}
