import SecretCrypto

// The encrypted format of gnome-keyring (its docs/file-format.txt, pkcs11/secret-store/
// gkm-secret-binary.c), all numbers big-endian, strings and byte arrays length-prefixed:
//
//   "GnomeKeyring\n\r\0\n", then 4 bytes: major 0, minor 0, cipher 0 (AES-128), hash 0 (MD5)
//   label; modified, created (gnome-keyring writes them in this order and reads them back
//       swapped); flags; lock timeout; hash iterations;
//       8-byte salt; 4 reserved words
//   item count; per item: id, type, attributes with their values hashed (not needed here)
//   size of the encrypted part, then that part: AES-128-CBC under ``Gcrypt/gnomeKeyringKey``,
//       zero-padded; it starts with the MD5 of the rest, the check of the password; then per
//       item: label, secret, created, modified, a reserved string and 4 reserved words,
//       attributes (name, type 0 and a string or type 1 and a 32-bit number), and its ACL.

extension GnomeKeyringFile {
    /// The first 16 bytes of an encrypted keyring.
    static let binaryMagic: [UInt8] = Array("GnomeKeyring\n\r\u{0}\n".utf8)

    static func readBinary(_ data: [UInt8], name: String, password: SecureBytes?) throws(GnomeKeyringError) -> GnomeKeyring {
        try typed { try data.withUnsafeBytes { (raw) throws(GnomeKeyringError) -> GnomeKeyring in
            var file = ByteReader(raw, from: binaryMagic.count)
            let version = try (file.byte(), file.byte(), file.byte(), file.byte())
            guard version == (0, 0, 0, 0) else {
                throw .unsupportedVersion("version \(version.0).\(version.1), cipher \(version.2), hash \(version.3)")
            }
            let label = try file.string() ?? ""
            // Two times, the modification first as gnome-keyring writes them; it reads them back
            // swapped, so after a few saves either may be either (and one is often 0). The
            // earlier is taken as the creation, the later as the last change.
            let times = try [file.time(), file.time()]
            let created = times.filter { $0 > 0 }.min() ?? 0
            let modified = times.max() ?? 0
            try file.skipWords(2)  // flags, lock timeout: secretd has its own lock-after-idle
            let iterations = try file.uint32()
            let salt = Array(try file.take(8))
            try file.skipWords(4)
            let count = Int(try file.uint32())
            guard count <= file.remaining / 12 else { throw .damaged("it claims \(count) items") }
            var types: [UInt32] = []
            for _ in 0..<count {
                _ = try file.uint32()  // id
                types.append(try file.uint32())
                _ = try readAttributes(&file)  // hashed: the encrypted part has them in full
            }
            let size = Int(try file.uint32())
            guard size % 16 == 0, size >= 16 else { throw .damaged("an encrypted part of \(size) bytes") }
            let encrypted = try file.take(size)
            guard let password else { throw .passwordRequired }
            guard (1...1_000_000).contains(iterations) else { throw .damaged("\(iterations) key derivation iterations") }
            let plaintext: SecureBytes
            do {
                let (key, iv) = try Gcrypt.gnomeKeyringKey(password: password, salt: salt, iterations: Int(iterations))
                plaintext = try Gcrypt.decryptAES128CBCBlocks(ArraySlice(encrypted), key: key, iv: iv)
            } catch {
                throw .damaged("\(error)")
            }
            return try plaintext.withBytes { (decrypted) throws(GnomeKeyringError) -> GnomeKeyring in
                let check = Gcrypt.md5(UnsafeRawBufferPointer(rebasing: decrypted[16...]))
                guard decrypted.prefix(16).elementsEqual(check) else { throw .wrongPassword }
                var reader = ByteReader(decrypted, from: 16)
                var items: [GnomeKeyring.Item] = []
                for type in types {
                    items.append(try readItem(&reader, type: type))
                }
                return GnomeKeyring(name: name, label: label, created: created, modified: modified, items: items)
            }
        } }
    }

    /// How many items an encrypted keyring holds, read from its unencrypted header (no
    /// password needed); nil when the header is damaged.
    public static func itemCount(_ data: [UInt8]) -> Int? {
        if isVersion1(data) { return version1ItemCount(data) }
        guard isEncrypted(data) else { return nil }
        return try? typed {
            try data.withUnsafeBytes { (raw) throws(GnomeKeyringError) -> Int in
                var file = ByteReader(raw, from: binaryMagic.count + 4)
                _ = try file.string()
                try file.skipWords(4 + 3)  // two times (two words each), flags, lock timeout, iterations
                _ = try file.take(8)
                try file.skipWords(4)
                return Int(try file.uint32())
            }
        }
    }

    /// `body`'s result, its error typed again (the standard library's `withUnsafeBytes` only rethrows).
    static func typed<T>(_ body: () throws -> T) throws(GnomeKeyringError) -> T {
        do { return try body() } catch let error as GnomeKeyringError { throw error } catch { throw .damaged("\(error)") }
    }

    /// One item of the encrypted part.
    private static func readItem(_ reader: inout ByteReader, type: UInt32) throws(GnomeKeyringError) -> GnomeKeyring.Item {
        let label = try reader.string() ?? ""
        let secret = SecureBytes(copying: try reader.byteArray())
        let created = try reader.time()
        let modified = try reader.time()
        _ = try reader.string()  // reserved
        try reader.skipWords(4)
        var attributes = try readAttributes(&reader)
        if attributes[schemaAttribute] == nil { attributes[schemaAttribute] = schema(ofItemType: type) }
        let entries = try reader.uint32()  // the ACL: which programs of the old API may read it
        guard entries <= reader.remaining / 20 else { throw .damaged("an access list of \(entries) entries") }
        for _ in 0..<entries {
            _ = try reader.uint32()
            _ = try reader.string()
            _ = try reader.string()
            _ = try reader.string()
            _ = try reader.uint32()
        }
        return GnomeKeyring.Item(label: label, attributes: attributes, secret: secret, created: created, modified: modified)
    }

    /// A list of attributes; 32-bit ones as decimal strings.
    private static func readAttributes(_ reader: inout ByteReader) throws(GnomeKeyringError) -> [String: String] {
        let count = try reader.uint32()
        guard count <= reader.remaining / 12 else { throw .damaged("an item with \(count) attributes") }
        var attributes: [String: String] = [:]
        for _ in 0..<count {
            guard let name = try reader.string() else { throw .damaged("an attribute without a name") }
            switch try reader.uint32() {
            case 0: attributes[name] = try reader.string() ?? ""
            case 1: attributes[name] = String(try reader.uint32())
            case let type: throw .damaged("an attribute of type \(type)")
            }
        }
        return attributes
    }
}
