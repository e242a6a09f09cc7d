// The audit trail's storage (schema version 8): entries sealed for an X25519 key pair whose
// public half is in the clear, so they are written while keyrings are locked, and whose
// private half is sealed under a keyring's master key, so reading them needs it unlocked.
// A row holds one entry, or the entries of one write at one time (a batch of an import),
// sealed together: one seal and one row for a thousand items rather than a thousand.

import KeychainCore
import SecretCrypto

extension Store {
    /// The newest audit key pair, if there is one.
    public func auditKey() throws(StoreError) -> AuditKey? {
        try database.firstRow(Self.newestAuditKey, [], Self.auditKey)
    }

    /// Makes a new audit key pair, its private half sealed under `collection`'s master key
    /// (which `keys` must hold); entries are sealed for it from now on.
    public func createAuditKey(sealedBy collection: CollectionRecord, keys: ItemKeys) throws(StoreError) -> AuditKey {
        guard let master = keys.master else { throw .locked }
        let privateKey = Gcrypt.randomKey(count: Gcrypt.x25519Length)
        let (publicKey, sealed) = try StoreError.fromCrypto { () throws(CryptoError) in
            let publicKey = try Gcrypt.x25519PublicKey(of: privateKey)
            let sealed = try privateKey.withBytes { (bytes) throws(CryptoError) in
                try Gcrypt.seal(bytes, key: master, associatedData: Self.auditKeyAssociatedData(collection.uuid, publicKey))
            }
            return (publicKey, sealed)
        }
        try database.insert([
            AuditKeyColumn.collectionID: .integer(collection.id), .publicKey: .blob(publicKey),
            .sealedPrivateKey: .blob(sealed), .created: .integer(Int64(Self.now())),
        ])
        return AuditKey(id: database.lastInsertID, collectionID: collection.id, publicKey: publicKey)
    }

    /// A writer for `key`: a fresh X25519 key pair of its own, and the key it agrees with `key`.
    public func auditWriter(for key: AuditKey) throws(StoreError) -> AuditWriter {
        try StoreError.fromCrypto { () throws(CryptoError) in
            let own = Gcrypt.randomKey(count: Gcrypt.x25519Length)
            let ownPublic = try Gcrypt.x25519PublicKey(of: own)
            let shared = try Gcrypt.x25519SharedSecret(own, peerPublicKey: key.publicKey)
            return AuditWriter(
                key: key, writerPublicKey: ownPublic,
                sealingKey: try Self.auditSealingKey(shared, writer: ownPublic, recipient: key.publicKey))
        }
    }

    /// Seals `entries` with `writer` and appends them to the trail: each run of entries with
    /// the same time (a write's entries: a batch of an import) sealed together as one row.
    public func appendAudit(_ entries: [AuditEntry], by writer: AuditWriter) throws(StoreError) {
        var start = entries.startIndex
        while start < entries.endIndex {
            let time = entries[start].time
            let end = entries[start...].firstIndex { $0.time != time } ?? entries.endIndex
            let plaintext = SecureBytes(AuditEntry.encoded(together: Array(entries[start..<end])))
            let sealed = try StoreError.fromCrypto { () throws(CryptoError) in
                try plaintext.withBytes { (bytes) throws(CryptoError) in
                    try Gcrypt.seal(
                        bytes, key: writer.sealingKey, associatedData: Self.auditEntryAssociatedData(writer.key.id, time, writer.writerPublicKey))
                }
            }
            try database.insert([
                AuditEntryColumn.keyID: .integer(writer.key.id), .time: .integer(time),
                .writer: .blob(writer.writerPublicKey), .sealed: .blob(sealed),
            ])
            start = end
        }
    }

    /// The entries from `since` (milliseconds since 1970) on, oldest first, each opened with
    /// the private key of its key pair: those sealed for a keyring whose keys `keys` does not
    /// give are counted, not read.
    public func readAudit(since: Int64, keys: (CollectionRecord) -> ItemKeys?) throws(StoreError) -> AuditReading {
        let collections = try self.collections()
        var privateKeys: [Int64: SecureBytes] = [:]
        var publicKeys: [Int64: [UInt8]] = [:]
        var locked: Set<String> = []
        for (id, collectionID, publicKey, sealed) in try database.rows(Self.everyAuditKey, [], Self.sealedAuditKey) {
            publicKeys[id] = publicKey
            guard let collection = collections.first(where: { $0.id == collectionID }) else { continue }
            guard let master = keys(collection)?.master else {
                locked.insert(collection.name)
                continue
            }
            privateKeys[id] = try? Gcrypt.open(
                sealed, key: master, associatedData: Self.auditKeyAssociatedData(collection.uuid, publicKey))
        }
        var agreed: [[UInt8]: SecureBytes] = [:]
        var reading = AuditReading(entries: [], unreadable: 0, lockedKeyrings: locked.sorted())
        let rows = try database.rows(Self.auditEntriesSince, [.integer(since)]) { row in
            (keyID: row.integer(.keyID) ?? 0, time: row.integer(.time) ?? 0, writer: row.blob(.writer) ?? [], sealed: row.blob(.sealed) ?? [])
        }
        for (keyID, time, writer, sealed) in rows {
            guard let privateKey = privateKeys[keyID], let publicKey = publicKeys[keyID] else {
                reading.unreadable += 1
                continue
            }
            let agreementKey = [UInt8](withUnsafeBytes(of: keyID.bigEndian) { Array($0) }) + writer
            let sealingKey: SecureBytes
            if let known = agreed[agreementKey] {
                sealingKey = known
            } else {
                guard let shared = try? Gcrypt.x25519SharedSecret(privateKey, peerPublicKey: writer),
                      let derived = try? Self.auditSealingKey(shared, writer: writer, recipient: publicKey)
                else {
                    reading.unreadable += 1
                    continue
                }
                agreed[agreementKey] = derived
                sealingKey = derived
            }
            guard let opened = try? Gcrypt.open(
                      sealed, key: sealingKey, associatedData: Self.auditEntryAssociatedData(keyID, time, writer)),
                  let entries = opened.withBytes({ AuditEntry.decoded(together: $0) }),
                  entries.allSatisfy({ $0.time == time })
            else {
                reading.unreadable += 1
                continue
            }
            reading.entries += entries
        }
        return reading
    }

    /// Deletes the entries older than `before` (milliseconds since 1970); how many went.
    @discardableResult
    public func pruneAudit(before: Int64) throws(StoreError) -> Int {
        let changesBefore = database.totalChanges
        try database.run("DELETE FROM audit_entries WHERE time < ?", [.integer(before)])
        return Int(database.totalChanges - changesBefore)
    }

    /// How many sealed records the trail holds: an entry, or the entries of one write sealed together.
    public func auditCount() throws(StoreError) -> Int {
        Int(try database.rows("SELECT count(*) FROM audit_entries").first?.first?.integer ?? 0)
    }

    private static let newestAuditKey = Query(
        Selection<AuditKeyColumn>([.id, .collectionID, .publicKey]), "FROM audit_keys ORDER BY id DESC LIMIT 1")
    private static let everyAuditKey = Query(
        Selection<AuditKeyColumn>([.id, .collectionID, .publicKey, .sealedPrivateKey]), "FROM audit_keys")
    private static let auditEntriesSince = Query(
        Selection<AuditEntryColumn>([.keyID, .time, .writer, .sealed]), "FROM audit_entries WHERE time >= ? ORDER BY id")

    private static func auditKey(_ row: Row<AuditKeyColumn>) -> AuditKey {
        AuditKey(id: row.integer(.id) ?? 0, collectionID: row.integer(.collectionID) ?? 0, publicKey: row.blob(.publicKey) ?? [])
    }

    private static func sealedAuditKey(_ row: Row<AuditKeyColumn>) -> (Int64, Int64, [UInt8], [UInt8]) {
        (row.integer(.id) ?? 0, row.integer(.collectionID) ?? 0, row.blob(.publicKey) ?? [], row.blob(.sealedPrivateKey) ?? [])
    }

    /// The key entries are sealed with, from the secret the writer and the key pair share.
    private static func auditSealingKey(_ shared: SecureBytes, writer: [UInt8], recipient: [UInt8]) throws(CryptoError) -> SecureBytes {
        try Gcrypt.hkdfSHA256(shared, info: Array("secretd audit entries v1".utf8) + writer + recipient, length: Gcrypt.keyLength)
    }

    private static func auditKeyAssociatedData(_ uuid: [UInt8], _ publicKey: [UInt8]) -> [UInt8] {
        Array("secretd-audit-key-v1".utf8) + uuid + publicKey
    }

    private static func auditEntryAssociatedData(_ keyID: Int64, _ time: Int64, _ writer: [UInt8]) -> [UInt8] {
        Array("secretd-audit-entry-v1".utf8) + withUnsafeBytes(of: keyID.bigEndian) { Array($0) }
            + withUnsafeBytes(of: time.bigEndian) { Array($0) } + writer
    }
}
