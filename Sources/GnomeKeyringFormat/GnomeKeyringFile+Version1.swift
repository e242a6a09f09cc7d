import SecretCrypto

// Version 1 keyring files, written by libsecret's file backend (the keyring of a Flatpak app,
// `~/.var/app/APP/data/keyrings/default.keyring`) and by oo7 (`~/.local/share/keyrings/v1/`),
// as libsecret's egg/egg-keyring1 and oo7's client/src/file read them:
//
//   "GnomeKeyring\n\r\0\n", major 1, minor 0; then one little-endian GVariant
//   (uayutua(a{say}ay)): salt size, salt, PBKDF2 iterations, modified time, usage count, and
//   the items, each its attributes with their values hashed and its sealed blob.
//   Key: PBKDF2-HMAC-SHA256(password, salt, iterations), 16 bytes, for the cipher and the MACs.
//   Blob: AES-128-CBC (PKCS#7) ciphertext ‖ IV (16) ‖ HMAC-SHA256(key, ciphertext ‖ IV) (32),
//   whose plaintext is the GVariant (a{ss}sttay): attributes, label, created, modified, secret.
//   A hashed attribute value is HMAC-SHA256(key, value); they are checked after decrypting, as
//   oo7 does, so an item moved or altered in the clear part is refused.

extension GnomeKeyringFile {
    /// The key length of a version 1 file.
    static let version1KeyLength = 16
    /// The lengths of the IV and the MAC that end a blob.
    private static let ivLength = 16
    private static let macLength = 32

    /// The parts of a version 1 file that need no password.
    private struct Version1Header {
        var salt: [UInt8]
        var iterations: Int
        var modified: UInt64
        /// Each item's hashed attributes and blob.
        var items: [(hashes: [String: UnsafeRawBufferPointer], blob: UnsafeRawBufferPointer)]
    }

    /// Whether `data` is a version 1 file (by its version byte: version 0 files have the same magic).
    static func isVersion1(_ data: [UInt8]) -> Bool {
        data.starts(with: binaryMagic) && data.count > binaryMagic.count && data[binaryMagic.count] == 1
    }

    static func readVersion1(_ data: [UInt8], name: String, password: SecureBytes?) throws(GnomeKeyringError) -> GnomeKeyring {
        try readVersion1(data, name: name) { (salt, iterations) throws(GnomeKeyringError) in
            guard let password else { throw .passwordRequired }
            do {
                return try Gcrypt.pbkdf2SHA256(password: password, salt: salt, iterations: iterations, length: version1KeyLength)
            } catch {
                throw .damaged("\(error)")
            }
        }
    }

    /// Reads a version 1 file with the key `key` gives for its salt and iteration count (tests
    /// hand in one they derived before, so that a thousand damaged copies need no derivation).
    static func readVersion1(
        _ data: [UInt8], name: String, key: (_ salt: [UInt8], _ iterations: Int) throws(GnomeKeyringError) -> SecureBytes
    ) throws(GnomeKeyringError) -> GnomeKeyring {
        try typed { try data.withUnsafeBytes { (raw) throws(GnomeKeyringError) -> GnomeKeyring in
            let header = try version1Header(raw)
            let key = try key(header.salt, header.iterations)
            var items: [GnomeKeyring.Item] = []
            for (index, item) in header.items.enumerated() {
                // The first item's MAC tells a wrong password; a later one's, an altered file.
                items.append(try openItem(item.blob, hashes: item.hashes, key: key, isFirst: index == 0))
            }
            let created = items.map(\.created).filter { $0 > 0 }.min() ?? header.modified
            return GnomeKeyring(name: name, label: name, created: created, modified: header.modified, items: items)
        } }
    }

    /// How many items a version 1 file holds (no password needed); nil when it is damaged.
    static func version1ItemCount(_ data: [UInt8]) -> Int? {
        data.withUnsafeBytes { try? version1Header($0).items.count }
    }

    private static func version1Header(_ raw: UnsafeRawBufferPointer) throws(GnomeKeyringError) -> Version1Header {
        guard raw.starts(with: binaryMagic) else { throw .notAKeyring }
        guard raw.count >= binaryMagic.count + 2 else { throw .damaged("it ends early (truncated?)") }
        let major = raw[binaryMagic.count]
        let minor = raw[binaryMagic.count + 1]
        guard major == 1, minor == 0 else { throw .unsupportedVersion("version \(major).\(minor)") }
        let body = GVariantReader(UnsafeRawBufferPointer(rebasing: raw[(binaryMagic.count + 2)...]))
        let fields = try body.tuple([
            .fixed(size: 4, alignment: 4), .variable, .fixed(size: 4, alignment: 4), .fixed(size: 8, alignment: 8),
            .fixed(size: 4, alignment: 4), .variable,
        ])
        let salt = Array(fields[1].byteString())
        guard try fields[0].uint32() == salt.count, !salt.isEmpty else { throw .damaged("a salt of the wrong size") }
        let iterations = try fields[2].uint32()
        guard (1...10_000_000).contains(iterations) else { throw .damaged("\(iterations) key derivation iterations") }
        var items: [(hashes: [String: UnsafeRawBufferPointer], blob: UnsafeRawBufferPointer)] = []
        for element in try fields[5].variableArray() {
            let parts = try element.tuple([.variable, .variable])
            var hashes: [String: UnsafeRawBufferPointer] = [:]
            for entry in try parts[0].variableArray() {
                let pair = try entry.tuple([.variable, .variable])
                hashes[try pair[0].string()] = pair[1].byteString()
            }
            items.append((hashes, parts[1].byteString()))
        }
        return Version1Header(salt: salt, iterations: Int(iterations), modified: try fields[3].uint64(), items: items)
    }

    /// Checks and decrypts one item's blob.
    private static func openItem(
        _ blob: UnsafeRawBufferPointer, hashes: [String: UnsafeRawBufferPointer], key: SecureBytes, isFirst: Bool
    ) throws(GnomeKeyringError) -> GnomeKeyring.Item {
        guard blob.count >= 16 + ivLength + macLength else { throw .damaged("an item of \(blob.count) bytes") }
        let ciphertextEnd = blob.count - ivLength - macLength
        let ciphertext = UnsafeRawBufferPointer(rebasing: blob[0..<ciphertextEnd])
        let iv = UnsafeRawBufferPointer(rebasing: blob[ciphertextEnd..<(blob.count - macLength)])
        let mac = UnsafeRawBufferPointer(rebasing: blob[(blob.count - macLength)...])
        let plaintext: SecureBytes
        do {
            let expected = try Gcrypt.hmacSHA256(key: key, message: [ciphertext, iv])
            guard expected.constantTimeEquals(SecureBytes(copying: mac)) else {
                throw isFirst ? GnomeKeyringError.wrongPassword : .damaged("an item was altered (its MAC does not match)")
            }
            plaintext = try Gcrypt.decryptAES128CBC(Array(ciphertext), key: key, iv: Array(iv))
        } catch let error as GnomeKeyringError {
            throw error
        } catch {
            throw .damaged("an item cannot be decrypted")
        }
        return try plaintext.withBytes { (bytes) throws(GnomeKeyringError) -> GnomeKeyring.Item in
            let fields = try GVariantReader(bytes).tuple([
                .variable, .variable, .fixed(size: 8, alignment: 8), .fixed(size: 8, alignment: 8), .variable,
            ])
            var attributes: [String: String] = [:]
            for entry in try fields[0].variableArray() {
                let pair = try entry.tuple([.variable, .variable])
                attributes[try pair[0].string()] = try pair[1].string()
            }
            try checkHashes(hashes, of: attributes, key: key)
            return GnomeKeyring.Item(
                label: try fields[1].string(), attributes: attributes, secret: SecureBytes(copying: fields[4].byteString()),
                created: try fields[2].uint64(), modified: try fields[3].uint64())
        }
    }

    /// The clear part's hashed attributes must be exactly the sealed ones, hashed.
    private static func checkHashes(
        _ hashes: [String: UnsafeRawBufferPointer], of attributes: [String: String], key: SecureBytes
    ) throws(GnomeKeyringError) {
        guard Set(hashes.keys) == Set(attributes.keys) else { throw .damaged("an item's attributes do not match their hashes") }
        for (name, value) in attributes {
            let bytes = Array(value.utf8)  // an attribute, not a secret
            let matches: Bool
            do {
                let hash = try bytes.withUnsafeBytes { (buffer) throws(CryptoError) in try Gcrypt.hmacSHA256(key: key, message: [buffer]) }
                matches = hash.constantTimeEquals(SecureBytes(copying: hashes[name]!))
            } catch {
                throw .damaged("an attribute cannot be hashed")
            }
            guard matches else { throw .damaged("an item's attributes do not match their hashes") }
        }
    }
}
