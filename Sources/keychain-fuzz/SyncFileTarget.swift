import Foundation
import SecretCrypto
import SecretStore
import SecretSync

/// What secretd reads from a sync remote, which anyone who can push to it controls, and the sync
/// state it reads back from its database: an item file (``SyncRecord``, opened with the vault
/// key), a device entry, a vault key wrapped for this device, the state
/// (``SyncVault/init(decoding:wallClock:)``) and an item's entry of it
/// (``SyncVault/takeEntry(_:_:)``).
///
/// The first byte picks which; the rest is the file. An item file that parses writes back the
/// same bytes; one that opens seals again to one that opens to the same item. Refusals are
/// ``SyncError`` values, never a crash; a state that decodes (whole, as before the entries were
/// kept apart, or without them) is kept as secretd keeps it, the state and an entry per item,
/// and reads back the same; so does an entry.
enum SyncFileTarget {
    /// The target.
    static let target = FuzzTarget(
        name: "sync-file", summary: "sync item files, device entries, wrapped vault keys and the sync state", maximumLength: 8192,
        run: run, generatedSeeds: seeds)

    /// The fixed vault, key, device and clock every input is read against (the seeds are made with them).
    private static let vault = [UInt8](repeating: 0x5a, count: 16)
    private static let vaultKey = SecureBytes([UInt8](repeating: 0x42, count: Gcrypt.keyLength))
    private static let identity: SyncIdentity = {
        guard let identity = try? SyncIdentity(id: [UInt8](repeating: 0x11, count: 16),
                                               privateKey: SecureBytes([UInt8](repeating: 0x24, count: Gcrypt.x25519Length)))
        else { fatalError("the fuzz target's device key is unusable") }
        return identity
    }()
    private static let wallClock: @Sendable () -> UInt64 = { 1_796_000_000_000 }

    /// An item, a delete marker, a device entry, a wrapped key and a state, all real.
    private static func seeds() -> [(name: String, data: Data)] {
        Gcrypt.initialize()
        let item = SyncItem(
            contents: ItemContents(label: "Mail ✓", attributes: ["service": "mail", "account": "alice"],
                                   secret: SecureBytes(Array("s3cr3t".utf8)), contentType: "text/plain"),
            created: 1_700_000_000, modified: 1_700_000_100)
        let header = SyncHeader(vault: vault, item: [UInt8](repeating: 0x33, count: 16),
                                timestamp: SyncTimestamp(milliseconds: 1_796_000_000_000, counter: 2), device: identity.device.id,
                                deleted: false, keyGeneration: 1)
        var deleted = header
        deleted.deleted = true
        var state = SyncVault(id: vault, identity: identity, clock: HybridLogicalClock(wallClock: wallClock))
        state.keys[1] = vaultKey
        state.starts[1] = .zero
        state.current[header.fileName] = header
        state.seen[header.fileName] = [SyncIDs.hex(identity.device.id): header.timestamp]
        guard let record = try? SyncRecord.seal(item, header: header, key: vaultKey),
            let marker = try? SyncRecord.seal(nil, header: deleted, key: vaultKey),
            let wrapped = try? SyncKeyWrap.wrap(vaultKey, start: .zero, generation: 1, vault: vault, for: identity.device)
        else { fatalError("cannot make the sync seeds") }
        return [
            ("item", Data([0] + record.bytes)), ("delete-marker", Data([0] + marker.bytes)),
            ("device", Data([1] + identity.device.entry)), ("wrapped-key", Data([2] + wrapped)),
            ("state", Data([3] + state.encoded(withEntries: true).withBytes { Array($0) })),
            ("entry", Data([4] + (state.encodedEntry(header.fileName) ?? []))),
        ]
    }

    private static func run(_ data: Data) {
        Gcrypt.initialize()
        var input = FuzzInput(data)
        let kind = input.byte() % 5
        let bytes = input.rest()
        switch kind {
        case 0: checkItemFile(bytes)
        case 1: checkDevice(bytes)
        case 2:
            // A wrapped key opens to a key of the right length, or is refused.
            if let (key, _) = try? SyncKeyWrap.unwrap(bytes, generation: 1, vault: vault, identity: identity, fileName: "keys/1/x") {
                require(key.count == Gcrypt.keyLength, "an unwrapped vault key has \(key.count) bytes")
            }
        case 3: checkState(bytes)
        default: checkEntry(bytes)
        }
    }

    /// The file's name as the repository would have it: the item id its header names.
    private static func fileName(_ bytes: [UInt8]) -> String {
        let start = Array("secretd sync item\n".utf8).count + 1 + 16
        return bytes.count >= start + 16 ? SyncIDs.hex(Array(bytes[start..<start + 16])) : "short"
    }

    private static func checkItemFile(_ bytes: [UInt8]) {
        let record: SyncRecord
        do {
            record = try SyncRecord(fileName: fileName(bytes), bytes: bytes, vault: vault)
        } catch {
            return
        }
        require(record.bytes == bytes, "an item file of \(bytes.count) bytes writes back \(record.bytes.count) other bytes")
        let item: SyncItem?
        do {
            item = try record.open(with: [1: vaultKey])
        } catch {
            return
        }
        require(item == nil || !record.header.deleted, "a delete marker opened to an item")
        let reopened: SyncItem?
        do {
            reopened = try SyncRecord.seal(item, header: record.header, key: vaultKey).open(with: [1: vaultKey])
        } catch {
            fatalError("an item that opened does not seal and open again: \(error)")
        }
        if let item, let reopened {
            require(reopened.contents.label == item.contents.label && reopened.contents.attributes == item.contents.attributes
                        && reopened.contents.secret.constantTimeEquals(item.contents.secret) && reopened.created == item.created,
                    "an item changed when sealed again")
        } else {
            require(item == nil && reopened == nil, "a delete marker changed when sealed again")
        }
    }

    private static func checkDevice(_ bytes: [UInt8]) {
        let magicLength = Array("secretd sync device\n".utf8).count + 1
        let name = bytes.count >= magicLength + 16 ? SyncIDs.hex(Array(bytes[magicLength..<magicLength + 16])) : "short"
        guard let device = try? SyncDevice(entry: bytes, fileName: name) else { return }
        require(device.entry == bytes, "a device entry writes back other bytes")
        require(device.code(in: vault).count == 7, "a device code is not ddd-ddd")
    }

    private static func checkState(_ bytes: [UInt8]) {
        guard let state = try? SyncVault(decoding: SecureBytes(bytes), wallClock: wallClock) else { return }
        require(state.touched == Set(state.current.keys).union(state.seen.keys), "a sync state decoded without touching what it held")
        // Kept as secretd keeps it: the state, and an entry for each item it touched.
        guard var again = try? SyncVault(decoding: state.encoded(), wallClock: wallClock) else {
            fatalError("a sync state that decoded does not decode once encoded again")
        }
        require(again.current.isEmpty && again.seen.isEmpty, "a sync state kept its entries inside")
        for name in state.touched {
            guard let entry = state.encodedEntry(name) else { continue }
            do {
                try again.takeEntry(name, entry)
            } catch {
                fatalError("an entry of a sync state that decoded does not read back: \(error)")
            }
        }
        require(again.id == state.id && again.current == state.current && again.seen == state.seen && again.generation == state.generation,
                "a sync state changed when encoded again")
    }

    private static func checkEntry(_ bytes: [UInt8]) {
        // The name an entry is kept under: the item its header names, or any when it holds none.
        let headerStart = Array("secretd sync entry\n".utf8).count + 1 + 1 + 16  // magic, held flag, vault id
        let name = bytes.count >= headerStart + 16 ? SyncIDs.hex(Array(bytes[headerStart..<headerStart + 16])) : String(repeating: "0", count: 32)
        var state = SyncVault(id: vault, identity: identity, clock: HybridLogicalClock(wallClock: wallClock))
        guard (try? state.takeEntry(name, bytes)) != nil else { return }
        require(state.touched.isEmpty, "an entry read back was touched")
        guard let entry = state.encodedEntry(name) else {
            require(state.current[name] == nil && state.seen[name] == nil, "an entry that holds something encodes to none")
            return
        }
        var again = SyncVault(id: vault, identity: identity, clock: HybridLogicalClock(wallClock: wallClock))
        do {
            try again.takeEntry(name, entry)
        } catch {
            fatalError("an entry that read back does not read back once encoded again: \(error)")
        }
        require(again.current[name] == state.current[name] && again.seen[name] == state.seen[name], "an entry changed when encoded again")
    }
}
