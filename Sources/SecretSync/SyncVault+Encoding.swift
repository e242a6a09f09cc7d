public import SecretCrypto

// What secretd stores of a machine's sync state, to be sealed under the keyring's master key.
// The state proper, in secure memory (the device's private key and the vault keys are in it):
//
//     "secretd sync state\n" 0x01
//     vault id (16) | device id (16) | device private key (32) | clock: milliseconds (8), counter (4)
//     key count (4), each: generation (4), start: milliseconds (8), counter (4), key (32)
//     held count (4), each: a SyncRecord header (65)
//     seen count (4), each: item id (16), device count (4), each: device id (16), milliseconds (8), counter (4)
//
//     (optional; a state written before it ends above) base length (4), the base commit in hex;
//     unsettled count (4), each: name length (4), file name
//
// Since issue 51 the held and seen counts are 0: each item's entry (its held header and what was
// seen of it) is kept on its own, so that a round writes only the entries it changed:
//
//     "secretd sync entry\n" 0x01
//     held (1): 0 or 1, then (when 1) a SyncRecord header (65)
//     device count (4), each: device id (16), milliseconds (8), counter (4)
//
// A state from before, with held headers and seen maps in it, decodes with all of them touched,
// for the caller to keep as entries. Numbers are big-endian. Nothing follows the last field.

extension SyncVault {
    private static let stateMagic = Array("secretd sync state\n".utf8) + [1]

    /// The state's bytes, in secure memory, without the items' entries (``encodedEntry(_:)``).
    public func encoded() -> SecureBytes { encoded(withEntries: false) }

    /// The state's bytes; with the entries of every item, as states were written before issue 51
    /// (for the tests and the fuzz target, which read states from before).
    package func encoded(withEntries: Bool) -> SecureBytes {
        let current = withEntries ? current : [:]
        let seen = withEntries ? seen : [:]
        let seenCount = seen.values.reduce(0) { $0 + 20 + $1.count * 28 }
        let baseBytes = Array((base ?? "").utf8)
        let unsettledNames = unsettled.sorted().map { Array($0.utf8) }
        let tail = 4 + baseBytes.count + 4 + unsettledNames.reduce(0) { $0 + 4 + $1.count }
        let size = tail + Self.stateMagic.count + 16 + 16 + Gcrypt.x25519Length + 12 + 4 + keys.count * (16 + Gcrypt.keyLength)
            + 4 + current.count * SyncRecord.headerLength + 4 + seenCount
        let output = SecureBytes(count: size)
        output.withMutableBytes { buffer in
            var offset = 0
            func put(_ bytes: [UInt8]) {
                for byte in bytes {
                    buffer[offset] = byte
                    offset += 1
                }
            }
            func put(_ secret: SecureBytes) {
                secret.withBytes { bytes in
                    buffer.baseAddress!.advanced(by: offset).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                    offset += bytes.count
                }
            }
            func put(_ number: UInt32) { put(withUnsafeBytes(of: number.bigEndian) { Array($0) }) }
            func put(_ time: SyncTimestamp) {
                put(withUnsafeBytes(of: time.milliseconds.bigEndian) { Array($0) })
                put(time.counter)
            }
            put(Self.stateMagic)
            put(id)
            put(identity.device.id)
            put(identity.privateKey)
            put(clock.last)
            put(UInt32(keys.count))
            for (generation, key) in keys.sorted(by: { $0.key < $1.key }) {
                put(generation)
                put(starts[generation] ?? .zero)
                put(key)
            }
            put(UInt32(current.count))
            for (_, header) in current.sorted(by: { $0.key < $1.key }) { put(SyncRecord.encode(header)) }
            put(UInt32(seen.count))
            for (item, devices) in seen.sorted(by: { $0.key < $1.key }) {
                put(SyncIDs.bytes(hex: item) ?? [UInt8](repeating: 0, count: 16))
                put(UInt32(devices.count))
                for (device, time) in devices.sorted(by: { $0.key < $1.key }) {
                    put(SyncIDs.bytes(hex: device) ?? [UInt8](repeating: 0, count: 16))
                    put(time)
                }
            }
            put(UInt32(baseBytes.count))
            put(baseBytes)
            put(UInt32(unsettledNames.count))
            for name in unsettledNames {
                put(UInt32(name.count))
                put(name)
            }
        }
        return output
    }

    /// The state in `bytes` (``encoded()``'s), with a clock reading `wallClock`.
    public init(decoding bytes: SecureBytes, wallClock: @escaping @Sendable () -> UInt64) throws(SyncError) {
        var offset = 0
        func take(_ count: Int) throws(SyncError) -> [UInt8] {
            guard count >= 0, bytes.count - offset >= count else { throw .malformed("the sync state is truncated") }
            defer { offset += count }
            return bytes.withBytes { Array($0[offset..<offset + count]) }
        }
        func takeSecret(_ count: Int) throws(SyncError) -> SecureBytes {
            guard bytes.count - offset >= count else { throw .malformed("the sync state is truncated") }
            let secret = SecureBytes(count: count)
            secret.withMutableBytes { out in bytes.withBytes { out.baseAddress!.copyMemory(from: $0.baseAddress!.advanced(by: offset), byteCount: count) } }
            offset += count
            return secret
        }
        func number() throws(SyncError) -> UInt32 { try take(4).reduce(0) { $0 << 8 | UInt32($1) } }
        func time() throws(SyncError) -> SyncTimestamp {
            let milliseconds = try take(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return SyncTimestamp(milliseconds: milliseconds, counter: try number())
        }
        func count(_ entrySize: Int) throws(SyncError) -> Int {
            let count = Int(try number())
            guard count <= (bytes.count - offset) / entrySize else { throw .malformed("the sync state's counts are impossible") }
            return count
        }
        guard try take(Self.stateMagic.count) == Self.stateMagic else { throw .malformed("not a sync state") }
        let vault = try take(16)
        let deviceID = try take(16)
        let privateKey = try takeSecret(Gcrypt.x25519Length)
        let identity: SyncIdentity
        do {
            identity = try SyncIdentity(id: deviceID, privateKey: privateKey)
        } catch {
            throw .malformed("the device key is unusable")
        }
        self.init(id: vault, identity: identity, clock: HybridLogicalClock(last: try time(), wallClock: wallClock))
        for _ in 0..<(try count(16 + Gcrypt.keyLength)) {
            let generation = try number()
            starts[generation] = try time()
            keys[generation] = try takeSecret(Gcrypt.keyLength)
        }
        for _ in 0..<(try count(SyncRecord.headerLength)) {
            hold(SyncRecord.decode(try take(SyncRecord.headerLength)))
        }
        for _ in 0..<(try count(20)) {
            let item = SyncIDs.hex(try take(16))
            var devices: [String: SyncTimestamp] = [:]
            for _ in 0..<(try count(28)) {
                let device = SyncIDs.hex(try take(16))
                devices[device] = try time()
            }
            // An item seen from no device is one nothing was seen of (as an entry keeps it).
            guard !devices.isEmpty else { continue }
            seen[item] = devices
            touched.insert(item)
        }
        if offset < bytes.count {
            let commit = String(decoding: try take(Int(try number())), as: UTF8.self)
            base = commit.isEmpty ? nil : commit
            for _ in 0..<(try count(4)) { unsettled.insert(String(decoding: try take(Int(try number())), as: UTF8.self)) }
        }
        guard offset == bytes.count else { throw .malformed("bytes follow the sync state") }
    }

    private static let entryMagic = Array("secretd sync entry\n".utf8) + [1]

    /// The entry of item file `name`: the version held and what was seen of it; nil when there
    /// is neither (the caller drops the entry it kept).
    public func encodedEntry(_ name: String) -> [UInt8]? {
        let held = current[name]
        let devices = seen[name] ?? [:]
        guard held != nil || !devices.isEmpty else { return nil }
        var bytes = Self.entryMagic
        if let held {
            bytes.append(1)
            bytes += SyncRecord.encode(held)
        } else {
            bytes.append(0)
        }
        bytes += withUnsafeBytes(of: UInt32(devices.count).bigEndian) { Array($0) }
        for (device, time) in devices.sorted(by: { $0.key < $1.key }) {
            bytes += SyncIDs.bytes(hex: device) ?? [UInt8](repeating: 0, count: 16)
            bytes += withUnsafeBytes(of: time.milliseconds.bigEndian) { Array($0) }
            bytes += withUnsafeBytes(of: time.counter.bigEndian) { Array($0) }
        }
        return bytes
    }

    /// Takes in the entry of item file `name` (``encodedEntry(_:)``'s bytes); not touched.
    public mutating func takeEntry(_ name: String, _ bytes: [UInt8]) throws(SyncError) {
        var offset = 0
        func take(_ count: Int) throws(SyncError) -> ArraySlice<UInt8> {
            guard bytes.count - offset >= count else { throw .malformed("the sync entry of \(name) is truncated") }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }
        func number<T: FixedWidthInteger>(_ type: T.Type) throws(SyncError) -> T {
            try take(MemoryLayout<T>.size).reduce(T(0)) { $0 << 8 | T($1) }
        }
        guard try take(Self.entryMagic.count).elementsEqual(Self.entryMagic) else { throw .malformed("the sync entry of \(name) is not one") }
        let held = try take(1).first
        guard held == 0 || held == 1 else { throw .malformed("the sync entry of \(name) has unknown flags") }
        var header: SyncHeader?
        if held == 1 {
            header = SyncRecord.decode(Array(try take(SyncRecord.headerLength)))
            guard header?.fileName == name else { throw .malformed("the sync entry of \(name) holds another item") }
        }
        let count = Int(try number(UInt32.self))
        guard count <= (bytes.count - offset) / 28 else { throw .malformed("the sync entry of \(name) has an impossible count") }
        var devices: [String: SyncTimestamp] = [:]
        for _ in 0..<count {
            let device = SyncIDs.hex(Array(try take(16)))
            devices[device] = SyncTimestamp(milliseconds: try number(UInt64.self), counter: try number(UInt32.self))
        }
        guard offset == bytes.count else { throw .malformed("bytes follow the sync entry of \(name)") }
        current[name] = header
        seen[name] = devices.isEmpty ? nil : devices
    }
}
