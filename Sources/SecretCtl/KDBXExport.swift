package import FoundationEssentials
import Keychain
import KeychainCore
package import SecretCrypto

/// `secretctl export --format kdbx`: a KeePass database (KDBX 4.0) that KeePassXC and KeePass
/// open with the passphrase: Argon2id (the parameters of secretd's own keyrings), AES-256-CBC,
/// HMAC-SHA256 blocks, no compression; written after KeePassXC's `src/format/Kdbx4Writer.cpp`
/// and the format summary in the project's research notes.
///
/// - One group per keyring (collection) inside a root group `secretd`.
/// - An entry per item: Title the label, UserName the `user` or `account`, URL rebuilt from an
///   internet password's attributes, Password the secret, Notes its `notes`; every attribute
///   also as a field of its own name, so nothing is lost; the item's times.
/// - A secret that is not UTF-8 text cannot be a KDBX password: such items are left out and
///   counted (a later version may carry them as attachments).
/// - Values are not marked protected: KeePassXC reads them the same; only its in-memory
///   obfuscation of the file's XML is missing, which matters for nothing on disk (the whole
///   payload is encrypted).
package enum KDBXExport {
    /// One item to write.
    package struct Entry {
        var collection: String
        var label: String
        var attributes: [String: String]
        var secret: Data
        var created: Date
        var modified: Date

        /// An item of `collection` (the fuzz target's seeds make these).
        package init(collection: String, label: String, attributes: [String: String], secret: Data, created: Date, modified: Date) {
            self.collection = collection
            self.label = label
            self.attributes = attributes
            self.secret = secret
            self.created = created
            self.modified = modified
        }
    }

    private static let signature1: UInt32 = 0x9AA2_D903
    private static let signature2: UInt32 = 0xB54B_FB67
    private static let version: UInt32 = 0x0004_0000
    /// KeePass's cipher and KDF identifiers.
    private static let aes256 = uuidBytes("31c1f2e6-bf71-4350-be58-05216afc5aff")
    private static let argon2id = uuidBytes("9e298b19-56db-4773-b23d-fc3ec6f0a1e6")
    /// The inner stream (ChaCha20) that protected values would use; KDBX 4 needs it named.
    private static let chaCha20Stream: UInt32 = 3

    /// The database's bytes, and how many items were left out.
    package static func database(_ entries: [Entry], passphrase: Data, parameters: KDFParameters = .standard) throws(CommandLineError) -> (
        bytes: [UInt8], leftOut: Int
    ) {
        let masterSeed = Gcrypt.randomBytes(count: 32)
        let iv = Gcrypt.randomBytes(count: 16)
        let salt = Gcrypt.randomBytes(count: 32)

        var header: [UInt8] = []
        header += le(signature1) + le(signature2) + le(version)
        header += field(2, aes256)
        header += field(3, le(UInt32(0)))  // no compression
        header += field(4, masterSeed)
        header += field(7, iv)
        header += field(11, kdfParameters(salt: salt, parameters: parameters))
        header += field(0, Array("\r\n\r\n".utf8))

        // Keys: composite = SHA-256(SHA-256(passphrase)); transformed by Argon2id.
        var composite = Gcrypt.sha256(Gcrypt.sha256(Array(passphrase)))
        defer { composite.wipe() }
        let transformed: SecureBytes
        do {
            transformed = try composite.withUnsafeBytes { (bytes) throws(CryptoError) in try Gcrypt.argon2id(password: bytes, salt: salt, parameters: parameters) }
        } catch {
            throw .failure("cannot derive the database key: \(error)", status: .failed)
        }
        var transformedBytes = transformed.withBytes { Array($0) }
        defer { transformedBytes.wipe() }
        var cipherKey = Gcrypt.sha256(masterSeed + transformedBytes)
        defer { cipherKey.wipe() }
        var hmacBase = Gcrypt.sha512([masterSeed, transformedBytes, [1]])
        defer { hmacBase.wipe() }

        var output = header + Gcrypt.sha256(header) + (try hmac(blockIndex: UInt64.max, base: hmacBase, [header]))

        var (xml, leftOut) = document(entries)
        defer { xml.wipe() }
        var payload = field(1, le(chaCha20Stream)) + field(2, Gcrypt.randomBytes(count: 64)) + field(0, []) + xml
        defer { payload.wipe() }
        let encrypted: [UInt8]
        do { encrypted = try Gcrypt.encryptAES256CBC(payload, key: cipherKey, iv: iv) } catch {
            throw .failure("cannot encrypt the database: \(error)", status: .failed)
        }
        // HMAC blocks of 1 MiB, then an empty one.
        var index: UInt64 = 0
        var start = 0
        while true {
            let block = Array(encrypted[start..<min(start + (1 << 20), encrypted.count)])
            let size = le(UInt32(block.count))
            output += try hmac(blockIndex: index, base: hmacBase, [le(index), size, block]) + size + block
            if block.isEmpty { break }
            start += block.count
            index += 1
        }
        return (output, leftOut)
    }

    // MARK: - The XML

    private static func document(_ entries: [Entry]) -> (bytes: [UInt8], leftOut: Int) {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<KeePassFile>\n"
        xml += "<Meta><Generator>secretctl</Generator><DatabaseName>secretd</DatabaseName></Meta>\n<Root>\n"
        xml += "<Group><UUID>\(newUUID())</UUID><Name>secretd</Name>\n"
        var leftOut = 0
        let byCollection = Dictionary(grouping: entries, by: \.collection)
        for collection in byCollection.keys.sorted() {
            xml += "<Group><UUID>\(newUUID())</UUID><Name>\(escaped(collection))</Name>\n"
            for entry in byCollection[collection] ?? [] {
                guard let password = String(validating: entry.secret, as: UTF8.self) else {
                    leftOut += 1
                    continue
                }
                let attributes = entry.attributes
                xml += "<Entry><UUID>\(newUUID())</UUID>"
                xml += "<Times><CreationTime>\(time(entry.created))</CreationTime><LastModificationTime>\(time(entry.modified))</LastModificationTime></Times>"
                var fields: [(String, String)] = [
                    ("Title", entry.label), ("UserName", LoginAttributes.userName(of: attributes)), ("Password", password),
                    ("URL", LoginAttributes.url(of: attributes)), ("Notes", attributes[LoginAttributes.notes] ?? ""),
                ]
                let standard = Set(fields.map(\.0))
                fields += attributes.sorted { $0.key < $1.key }.filter { !standard.contains($0.key) }.map { ($0.key, $0.value) }
                for (key, value) in fields {
                    xml += "<String><Key>\(escaped(key))</Key><Value>\(escaped(value))</Value></String>"
                }
                xml += "</Entry>\n"
            }
            xml += "</Group>\n"
        }
        xml += "</Group>\n</Root>\n</KeePassFile>\n"
        return (Array(xml.utf8), leftOut)
    }

    /// Text as XML character data: markup escaped, and characters XML 1.0 cannot hold dropped.
    static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "\t", "\n", "\r": result.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF: continue
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// KDBX 4's time: seconds since 0001-01-01 as a little-endian Int64, in base64.
    private static func time(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970) + 62_135_596_800
        return Data(le(UInt64(bitPattern: seconds))).base64EncodedString()
    }

    private static func newUUID() -> String { Data(Gcrypt.randomBytes(count: 16)).base64EncodedString() }

    // MARK: - Binary pieces

    /// The KDF parameters as a KeePass VariantDictionary.
    private static func kdfParameters(salt: [UInt8], parameters: KDFParameters) -> [UInt8] {
        func entry(_ type: UInt8, _ name: String, _ value: [UInt8]) -> [UInt8] {
            [type] + le(UInt32(name.utf8.count)) + Array(name.utf8) + le(UInt32(value.count)) + value
        }
        var bytes: [UInt8] = [0x00, 0x01]  // version 1.0
        bytes += entry(0x42, "$UUID", argon2id)
        bytes += entry(0x42, "S", salt)
        bytes += entry(0x04, "P", le(UInt32(parameters.lanes)))
        bytes += entry(0x05, "M", le(UInt64(parameters.memoryKiB) * 1024))
        bytes += entry(0x05, "I", le(UInt64(parameters.iterations)))
        bytes += entry(0x04, "V", le(UInt32(0x13)))
        return bytes + [0x00]
    }

    /// HMAC-SHA256 of `parts` under the key of block `blockIndex` (SHA-512 of the index and the base key).
    private static func hmac(blockIndex: UInt64, base: [UInt8], _ parts: [[UInt8]]) throws(CommandLineError) -> [UInt8] {
        let key = SecureBytes(Gcrypt.sha512([le(blockIndex), base]))
        let joined = parts.reduce([], +)
        do {
            let mac = try joined.withUnsafeBytes { try Gcrypt.hmacSHA256(key: key, message: [$0]) }
            return mac.withBytes { Array($0) }
        } catch {
            throw .failure("cannot authenticate the database: \(error)", status: .failed)
        }
    }

    private static func field(_ id: UInt8, _ data: [UInt8]) -> [UInt8] { [id] + le(UInt32(data.count)) + data }

    private static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    private static func uuidBytes(_ text: String) -> [UInt8] {
        let hex = Array(text.filter { $0 != "-" }.utf8)
        return stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0...($0 + 1)], as: UTF8.self), radix: 16)! }
    }
}
