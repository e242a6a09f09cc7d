public import SecretCrypto
public import SecretStore
import KeychainCore

/// What a sync item file says in the clear: which vault and item, when and on which device its
/// version was made, whether it is a delete marker, and which vault key seals it. Nothing else
/// about the item (no label, attribute, secret or size beyond the file's own) is readable
/// without the vault key, and all of it is authenticated with the sealed part.
public struct SyncHeader: Equatable, Hashable, Sendable {
    /// The vault's random id (16 bytes).
    public var vault: [UInt8]
    /// The item's random id (16 bytes); the file is named by it.
    public var item: [UInt8]
    /// When this version was made (the device's hybrid logical clock).
    public var timestamp: SyncTimestamp
    /// The device that made it (16 bytes).
    public var device: [UInt8]
    /// Whether this version deletes the item.
    public var deleted: Bool
    /// The vault key generation that seals it.
    public var keyGeneration: UInt32

    /// A header; ids are 16 bytes.
    public init(vault: [UInt8], item: [UInt8], timestamp: SyncTimestamp, device: [UInt8], deleted: Bool, keyGeneration: UInt32) {
        self.vault = vault
        self.item = item
        self.timestamp = timestamp
        self.device = device
        self.deleted = deleted
        self.keyGeneration = keyGeneration
    }

    /// The file's name in the repository: the item id in lower-case hex.
    public var fileName: String { SyncIDs.hex(item) }

    /// Whether this version wins over `other` of the same item: the higher (timestamp, device)
    /// wins, the same on every machine.
    public func wins(over other: SyncHeader) -> Bool {
        if timestamp != other.timestamp { return timestamp > other.timestamp }
        return other.device.lexicographicallyPrecedes(device)
    }
}

/// One version of a synced item as the repository holds it: the clear header and the item
/// sealed with AES-256-GCM under the vault key, the header being the associated data, so that
/// changing any byte of either, or moving the sealed part under another header, is detected.
public struct SyncRecord: Equatable, Sendable {
    /// The clear part.
    public let header: SyncHeader
    /// The sealed item: nonce, ciphertext and tag.
    let sealed: [UInt8]

    /// The first bytes of every item file, with the format version.
    static let magic = Array("secretd sync item\n".utf8) + [1]
    /// The header's length after the magic: vault, item, milliseconds, counter, device, flags, generation.
    static let headerLength = 16 + 16 + 8 + 4 + 16 + 1 + 4

    /// Seals `item` (nil: a delete marker, whose sealed part is empty but still authenticated)
    /// under `key`, the vault key of the header's generation.
    public static func seal(_ item: SyncItem?, header: SyncHeader, key: SecureBytes) throws(SyncError) -> SyncRecord {
        guard header.vault.count == 16, header.item.count == 16, header.device.count == 16 else {
            throw .malformed("ids are 16 bytes")
        }
        let plaintext = item?.encoded() ?? SecureBytes(count: 0)
        let associated = magic + encode(header)
        do {
            let sealed = try plaintext.withBytes { (bytes) throws(CryptoError) in
                try Gcrypt.seal(bytes, key: key, associatedData: associated)
            }
            return SyncRecord(header: header, sealed: sealed)
        } catch {
            throw .malformed("cannot seal: \(error)")
        }
    }

    /// The file's bytes.
    public var bytes: [UInt8] { Self.magic + Self.encode(header) + sealed }

    /// The record in the file `fileName` of the repository, if it is one of vault `vault` and
    /// named by its item; its sealed part is opened by ``open(with:)``.
    public init(fileName: String, bytes: [UInt8], vault: [UInt8]) throws(SyncError) {
        guard bytes.starts(with: Self.magic) else { throw .malformed("\(fileName) does not start as an item file") }
        let headerEnd = Self.magic.count + Self.headerLength
        guard bytes.count >= headerEnd + Gcrypt.nonceLength + Gcrypt.tagLength else { throw .malformed("\(fileName) is truncated") }
        let headerBytes = Array(bytes[Self.magic.count..<headerEnd])
        // The flags byte is 0 or 1: any other value would read the same and write back other
        // bytes, a second file for one version.
        guard headerBytes[60] <= 1 else { throw .malformed("\(fileName) has unknown flags") }
        let header = Self.decode(headerBytes)
        guard header.fileName == fileName else { throw .renamed(file: fileName) }
        guard header.vault == vault else { throw .foreignVault(file: fileName) }
        self.header = header
        sealed = Array(bytes[headerEnd...])
    }

    /// The item, opened with the vault key of the header's generation from `keys`; nil for a
    /// delete marker.
    public func open(with keys: [UInt32: SecureBytes]) throws(SyncError) -> SyncItem? {
        guard let key = keys[header.keyGeneration] else {
            throw .unknownKeyGeneration(file: header.fileName, generation: header.keyGeneration)
        }
        let plaintext: SecureBytes
        do {
            plaintext = try Gcrypt.open(sealed, key: key, associatedData: Self.magic + Self.encode(header))
        } catch {
            throw .tampered(file: header.fileName)
        }
        if header.deleted {
            guard plaintext.count == 0 else { throw .tampered(file: header.fileName) }
            return nil
        }
        guard let item = try? SyncItem.decode(plaintext) else { throw .malformed("\(header.fileName) holds no item") }
        return item
    }

    private init(header: SyncHeader, sealed: [UInt8]) {
        self.header = header
        self.sealed = sealed
    }

    // MARK: - The header's bytes

    static func encode(_ header: SyncHeader) -> [UInt8] {
        var bytes = header.vault + header.item
        bytes += withUnsafeBytes(of: header.timestamp.milliseconds.bigEndian) { Array($0) }
        bytes += withUnsafeBytes(of: header.timestamp.counter.bigEndian) { Array($0) }
        bytes += header.device
        bytes.append(header.deleted ? 1 : 0)
        bytes += withUnsafeBytes(of: header.keyGeneration.bigEndian) { Array($0) }
        return bytes
    }

    static func decode(_ bytes: [UInt8]) -> SyncHeader {
        func number(_ range: Range<Int>) -> UInt64 { bytes[range].reduce(0) { $0 << 8 | UInt64($1) } }
        return SyncHeader(
            vault: Array(bytes[0..<16]), item: Array(bytes[16..<32]),
            timestamp: SyncTimestamp(milliseconds: number(32..<40), counter: UInt32(number(40..<44))),
            device: Array(bytes[44..<60]), deleted: bytes[60] & 1 == 1, keyGeneration: UInt32(number(61..<65)))
    }
}

/// An item as it travels between machines: everything but its local identity.
public struct SyncItem: Sendable {
    /// Label, attributes, secret and content type.
    public var contents: ItemContents
    /// Creation time, seconds since 1970.
    public var created: UInt64
    /// Last change, seconds since 1970.
    public var modified: UInt64

    /// An item with these contents and times.
    public init(contents: ItemContents, created: UInt64, modified: UInt64) {
        self.contents = contents
        self.created = created
        self.modified = modified
    }

    /// The plaintext that gets sealed: the two times (UInt64, big-endian), then the contents as
    /// the store seals them (ItemContents's format), in secure memory.
    public func encoded() -> SecureBytes {
        let contents = self.contents.encoded()
        let output = SecureBytes(count: 16 + contents.count)
        output.withMutableBytes { buffer in
            withUnsafeBytes(of: created.bigEndian) { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 8) }
            withUnsafeBytes(of: modified.bigEndian) { buffer.baseAddress!.advanced(by: 8).copyMemory(from: $0.baseAddress!, byteCount: 8) }
            contents.withBytes { if $0.count > 0 { buffer.baseAddress!.advanced(by: 16).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
        }
        return output
    }

    /// The item in `plaintext`, as ``encoded()`` wrote it.
    public static func decode(_ plaintext: SecureBytes) throws(StoreError) -> SyncItem {
        guard plaintext.count >= 16 else { throw .corrupted("the item is truncated") }
        let (created, modified) = plaintext.withBytes { bytes in
            (bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }, bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        }
        let rest = SecureBytes(count: plaintext.count - 16)
        rest.withMutableBytes { out in
            plaintext.withBytes { if out.count > 0 { out.baseAddress!.copyMemory(from: $0.baseAddress!.advanced(by: 16), byteCount: out.count) } }
        }
        return SyncItem(contents: try ItemContents.decode(rest), created: created, modified: modified)
    }
}

/// Random ids of vaults, items and devices, and their hex form.
public enum SyncIDs {
    /// A new random 16-byte id.
    public static func random() -> [UInt8] { Gcrypt.randomBytes(count: 16) }

    /// `bytes` in lower-case hex.
    public static func hex(_ bytes: [UInt8]) -> String { bytes.hexString }
}
