package import FoundationEssentials
import KeychainCore
import SecretCrypto

/// `secretctl import FILE.kdbx`: a KeePass database (KeePassXC, KeePass 2), KDBX 4.0 and 4.1,
/// and 3.1 (what `keepassxc-cli db-create` writes), read after the format summary in the
/// project's research notes and KeePassXC's `src/format/`:
///
/// - keys: a password, a key file, or both (KeePass's XML key files 1.0 and 2.0, 32 raw bytes,
///   64 hex digits, or any other file by its SHA-256); KDFs Argon2d, Argon2id and AES-KDF;
///   ciphers AES-256-CBC, ChaCha20 and Twofish-CBC; gzip or no compression; protected values
///   under the inner ChaCha20 or Salsa20 stream.
/// - KDBX 4: the header's SHA-256 tells a damaged header, its HMAC a wrong password, and each
///   block's HMAC a damaged payload. KDBX 3.1: the decrypted start bytes (or bad padding) tell
///   a wrong password, each block's SHA-256 a damaged payload, the header's SHA-256 recorded in
///   the XML a changed header.
/// - Each entry becomes an item by ``ImportedLogin``'s rule: Title, UserName, Password, URL and
///   Notes; KeePassXC's `otp` field as the TOTP setting; every other field as `field:NAME`; the
///   group path below the root group as `folder`; the tags. Entries in the recycle bin and
///   history entries are not imported. A database that ``KDBXExport`` wrote (generator
///   `secretctl`) gives back each item's own attributes, so an export imports as it was.
///
/// The whole file is read and checked before anything is stored.
package enum KDBXImport {
    /// What a database held.
    package struct Contents {
        /// The items to store.
        package var items: [ExportFile.Item] = []
        /// Entries with nothing to keep (no password and no notes).
        package var empty = 0
        /// Entries in the recycle bin.
        package var recycled = 0
        /// Attachments of the entries imported, which are not (a keychain item has one secret).
        package var attachments = 0
        /// The format version, such as "4.1".
        package var version = ""
    }

    /// The key of a database: its password and the contents of its key file, either optional.
    package struct Key {
        /// The password, as typed (UTF-8).
        package var password: Data?
        /// The key file's bytes.
        package var keyFile: Data?

        /// A key of a password and, optionally, a key file.
        package init(password: Data?, keyFile: Data? = nil) {
            self.password = password
            self.keyFile = keyFile
        }
    }

    private static let signature1: UInt32 = 0x9AA2_D903
    private static let signature2: UInt32 = 0xB54B_FB67
    /// KeePass 1's second signature (`.kdb`).
    private static let keePass1Signature: UInt32 = 0xB54B_FB65

    /// The most a payload may decompress to.
    private static let maximumPayload = 256 << 20

    /// The most key derivation work a file may ask for: its parameters come from the file, so
    /// a damaged or hostile one must not make the import take all memory or hours.
    package struct Limits: Sendable {
        /// Argon2's memory, in KiB.
        package var argon2MemoryKiB: UInt64
        /// Argon2's passes.
        package var argon2Iterations: UInt64
        /// AES-KDF's rounds.
        package var aesRounds: UInt64

        /// Limits for the command: 2 GiB and 100,000 passes of Argon2 (KeePassXC's default is
        /// 64 MiB), 2^31 AES-KDF rounds (minutes).
        package static let standard = Limits(argon2MemoryKiB: 2 << 20, argon2Iterations: 100_000, aesRounds: 1 << 31)

        /// Limits of the caller's choice (the fuzz target keeps them tiny).
        package init(argon2MemoryKiB: UInt64, argon2Iterations: UInt64, aesRounds: UInt64) {
            self.argon2MemoryKiB = argon2MemoryKiB
            self.argon2Iterations = argon2Iterations
            self.aesRounds = aesRounds
        }
    }

    /// Whether `data` starts with KeePass 2's signature (any version) or KeePass 1's.
    package static func isDatabase(_ data: Data) -> Bool {
        guard data.count >= 8 else { return false }
        let bytes = Array(data.prefix(8))
        return u32(bytes, 0) == signature1 && (u32(bytes, 4) == signature2 || u32(bytes, 4) == keePass1Signature)
    }

    /// The entries of the database `data`, opened with `key`; a clear error (and nothing
    /// read) for a wrong key, a damaged file or a version this does not read.
    package static func contents(_ data: Data, key: Key, limits: Limits = .standard) throws(CommandLineError) -> Contents {
        let bytes = Array(data)
        let header = try Header(bytes)
        var composite = compositeKey(key)
        defer { composite.wipe() }
        let transformed = try transform(composite, header: header, limits: limits)
        var transformedBytes = transformed.withBytes { Array($0) }
        defer { transformedBytes.wipe() }
        var cipherKey = Gcrypt.sha256(header.masterSeed + transformedBytes)
        defer { cipherKey.wipe() }

        // Every buffer of plain text below is a variable of its own, wiped when it goes.
        var payload: [UInt8]
        if header.major == 4 {
            var hmacBase = Gcrypt.sha512([header.masterSeed, transformedBytes, [1]])
            defer { hmacBase.wipe() }
            let mac = try hmac(blockIndex: .max, base: hmacBase, [Array(bytes[0..<header.length])])
            guard constantTimeEquals(mac, Array(bytes[(header.length + 32)..<(header.length + 64)])) else { throw wrongKey }
            payload = try decrypt(try blocks(bytes, from: header.length + 64, hmacBase: hmacBase), header: header, key: cipherKey)
        } else {
            var decrypted = try decrypt(Array(bytes[header.length...]), header: header, key: cipherKey)
            defer { decrypted.wipe() }
            guard decrypted.count >= 32, constantTimeEquals(Array(decrypted[0..<32]), header.streamStartBytes) else { throw wrongKey }
            payload = try hashedBlocks(decrypted, from: 32)
        }
        defer { payload.wipe() }
        var plain = header.compressed ? try gunzip(payload) : payload
        defer { plain.wipe() }
        if header.major == 3 {
            return try contents(
                xml: plain, stream: try innerStream(id: header.innerStreamID, key: header.protectedStreamKey), version: header.versionText,
                headerHash: Gcrypt.sha256(Array(bytes[0..<header.length])))
        }
        let (stream, xmlStart) = try innerHeader(plain)
        var xml = Array(plain[xmlStart...])
        defer { xml.wipe() }
        return try contents(xml: xml, stream: stream, version: header.versionText)
    }

    /// The entries of a database's XML whose values are not protected (for the fuzz target).
    package static func contents(xml: [UInt8]) throws(CommandLineError) -> Contents {
        try contents(xml: xml, stream: nil, version: "")
    }

    /// The entries of a database's XML, protected values read with `stream` (nil: none). KDBX
    /// 3.1 keeps the SHA-256 of its outer header in the XML (`Meta/HeaderHash`): `headerHash`
    /// is checked against it.
    private static func contents(
        xml: [UInt8], stream: Gcrypt.KeyStream?, version: String, headerHash: [UInt8]? = nil
    ) throws(CommandLineError) -> Contents {
        var root: XMLReader.Element
        do { root = try XMLReader.parse(xml) } catch {
            throw damaged("its XML cannot be read (\(error.reason) at byte \(error.offset))")
        }
        guard root.name == "KeePassFile" else { throw damaged("its XML is not a KeePass file") }
        let meta = root.child("Meta")
        if let headerHash, let recorded = meta?.child("HeaderHash")?.text.trimmingWhitespace, !recorded.isEmpty {
            guard Data(base64Encoded: recorded).map(Array.init) == headerHash else { throw damaged("its header does not match its payload") }
        }
        try unprotect(&root, stream: stream)
        let ownExport = meta?.child("Generator")?.text == "secretctl"
        let recycleBin = meta?.child("RecycleBinUUID")?.text.trimmingWhitespace
        var contents = Contents(version: version)
        guard let top = root.child("Root")?.child("Group") else { return contents }
        collect(top, path: [], isRoot: true, recycleBin: recycleBin, ownExport: ownExport, into: &contents)
        return contents
    }

    // MARK: - Entries

    private static func collect(
        _ group: XMLReader.Element, path: [String], isRoot: Bool, recycleBin: String?, ownExport: Bool, into contents: inout Contents
    ) {
        let inBin = !isRoot && recycleBin.map { !$0.isEmpty && $0 != "AAAAAAAAAAAAAAAAAAAAAA==" && group.child("UUID")?.text.trimmingWhitespace == $0 } ?? false
        if inBin {
            contents.recycled += countEntries(group)
            return
        }
        let path = isRoot ? [] : path + [group.child("Name")?.text ?? ""]
        for entry in group.children("Entry") {
            if let item = item(entry, folder: path.joined(separator: "/"), ownExport: ownExport) {
                contents.items.append(item)
                contents.attachments += entry.children("Binary").count
            } else {
                contents.empty += 1
            }
        }
        for child in group.children("Group") {
            collect(child, path: path, isRoot: false, recycleBin: recycleBin, ownExport: ownExport, into: &contents)
        }
    }

    private static func countEntries(_ group: XMLReader.Element) -> Int {
        group.children("Entry").count + group.children("Group").reduce(0) { $0 + countEntries($1) }
    }

    /// The standard fields of an entry.
    private static let standardFields: Set<String> = ["Title", "UserName", "Password", "URL", "Notes"]
    /// KeePassXC's field for a TOTP setting (`otpauth://…`).
    private static let otpField = "otp"

    private static func item(_ entry: XMLReader.Element, folder: String, ownExport: Bool) -> ExportFile.Item? {
        var fields: [String: String] = [:]
        for string in entry.children("String") {
            guard let key = string.child("Key")?.text, !key.isEmpty else { continue }
            fields[key] = string.child("Value")?.text ?? ""
        }
        if ownExport, fields["xdg:schema"] != nil {
            // secretctl's own export: every attribute is a field of its own name.
            let attributes = fields.filter { !standardFields.contains($0.key) }
            return ExportFile.Item(label: fields["Title"] ?? "", attributes: attributes, secret: Data((fields["Password"] ?? "").utf8))
        }
        var login = ImportedLogin()
        login.title = fields["Title"] ?? ""
        login.username = fields["UserName"] ?? ""
        login.password = fields["Password"] ?? ""
        login.url = fields["URL"] ?? ""
        login.notes = fields["Notes"] ?? ""
        login.otp = fields[otpField] ?? ""
        for (key, value) in fields where !standardFields.contains(key) && key != otpField {
            login.extra[LoginAttributes.fieldPrefix + key] = value
        }
        login.extra[LoginAttributes.folder] = folder
        let tags = (entry.child("Tags")?.text ?? "").split(whereSeparator: { $0 == ";" || $0 == "," }).map { $0.trimmingWhitespace }
        login.extra[LoginAttributes.tags] = tags.filter { !$0.isEmpty }.joined(separator: ",")
        return login.item
    }

    /// Replaces each protected value (base64 of its bytes XORed with the inner stream, which
    /// runs through them in document order, history entries included) with its text.
    private static func unprotect(_ element: inout XMLReader.Element, stream: Gcrypt.KeyStream?) throws(CommandLineError) {
        if element.attributes["Protected"]?.lowercased() == "true" {
            guard var bytes = Data(base64Encoded: element.text.trimmingWhitespace, options: .ignoreUnknownCharacters).map({ Array($0) }) else {
                throw damaged("a protected value is not base64")
            }
            defer { bytes.wipe() }
            if let stream {
                var failure: CryptoError?
                bytes.withUnsafeMutableBytes { buffer in
                    do throws(CryptoError) { try stream.apply(buffer) } catch { failure = error }
                }
                if let failure { throw .failure("cannot read a protected value: \(failure)", status: .failed) }
            }
            element.text = String(decoding: bytes, as: UTF8.self)
            element.attributes["Protected"] = nil
        }
        for index in element.children.indices { try unprotect(&element.children[index], stream: stream) }
    }

    // MARK: - The outer header

    /// What the outer header says.
    private struct Header {
        var major: UInt16 = 0
        var minor: UInt16 = 0
        /// Where the header ends (after its end field).
        var length = 0
        var cipher: [UInt8] = []
        var compressed = false
        var masterSeed: [UInt8] = []
        var iv: [UInt8] = []
        /// KDBX 4's KDF parameters.
        var kdf: [String: [UInt8]] = [:]
        /// KDBX 3.1's AES-KDF and inner stream.
        var transformSeed: [UInt8] = []
        var transformRounds: UInt64 = 0
        var protectedStreamKey: [UInt8] = []
        var streamStartBytes: [UInt8] = []
        var innerStreamID: UInt32 = 0

        var versionText: String { "\(major).\(minor)" }

        init(_ bytes: [UInt8]) throws(CommandLineError) {
            guard bytes.count >= 12 else { throw bytes.count >= 4 && u32(bytes, 0) == signature1 ? truncated : damaged("it has no KeePass signature") }
            guard u32(bytes, 0) == signature1 else { throw damaged("it has no KeePass signature") }
            if u32(bytes, 4) == keePass1Signature {
                throw .failure("this is a KeePass 1 database (.kdb), which secretctl does not read; open it in KeePassXC and save it as KDBX 4", status: .usage)
            }
            guard u32(bytes, 4) == signature2 else { throw damaged("it has no KeePass signature") }
            minor = UInt16(truncatingIfNeeded: u32(bytes, 8))
            major = UInt16(truncatingIfNeeded: u32(bytes, 8) >> 16)
            guard major == 3 || (major == 4 && minor <= 1) else {
                throw .failure(
                    "this KeePass database is KDBX \(versionText), which secretctl does not read (it reads 3.1, 4.0 and 4.1)", status: .usage)
            }
            // The fields first, then (KDBX 4) the checksum over them, then what they say.
            var fields: [(id: UInt8, value: [UInt8])] = []
            var offset = 12
            let lengthSize = major == 4 ? 4 : 2
            while fields.last?.id != 0 {
                guard offset + 1 + lengthSize <= bytes.count else { throw truncated }
                let id = bytes[offset]
                let size = lengthSize == 4 ? Int(u32(bytes, offset + 1)) : Int(u16(bytes, offset + 1))
                offset += 1 + lengthSize
                guard size <= bytes.count - offset else { throw truncated }
                fields.append((id, Array(bytes[offset..<(offset + size)])))
                offset += size
            }
            length = offset
            if major == 4 {
                guard bytes.count >= length + 64 else { throw truncated }
                guard Gcrypt.sha256(Array(bytes[0..<length])) == Array(bytes[length..<(length + 32)]) else {
                    throw damaged("its header fails its checksum")
                }
            }
            for (id, value) in fields {
                switch id {
                case 2: cipher = value
                case 3:
                    guard value.count == 4, u32(value, 0) <= 1 else { throw damaged("its compression flag is unknown") }
                    compressed = u32(value, 0) == 1
                case 4: masterSeed = value
                case 5: transformSeed = value
                case 6:
                    guard value.count == 8 else { throw damaged("its transform rounds are malformed") }
                    transformRounds = u64(value, 0)
                case 7: iv = value
                case 8: protectedStreamKey = value
                case 9: streamStartBytes = value
                case 10:
                    guard value.count == 4 else { throw damaged("its inner stream id is malformed") }
                    innerStreamID = u32(value, 0)
                case 11: kdf = try variantDictionary(value)
                default: break  // the end (0), comments (1), public custom data (12)
                }
            }
            guard masterSeed.count == 32 else { throw damaged("its master seed is malformed") }
            if major == 3 {
                guard streamStartBytes.count == 32 else { throw damaged("its stream start bytes are malformed") }
            }
        }
    }

    /// KDBX 4's VariantDictionary: a u16 version (major 1), then typed, named values.
    private static func variantDictionary(_ bytes: [UInt8]) throws(CommandLineError) -> [String: [UInt8]] {
        guard bytes.count >= 2, bytes[1] == 1 else { throw damaged("its KDF parameters have an unknown version") }
        var values: [String: [UInt8]] = [:]
        var offset = 2
        while true {
            guard offset < bytes.count else { throw damaged("its KDF parameters are truncated") }
            let type = bytes[offset]
            if type == 0 { return values }
            guard offset + 5 <= bytes.count else { throw damaged("its KDF parameters are truncated") }
            let nameLength = Int(u32(bytes, offset + 1))
            offset += 5
            guard nameLength <= bytes.count - offset, offset + nameLength + 4 <= bytes.count else { throw damaged("its KDF parameters are truncated") }
            let name = String(decoding: bytes[offset..<(offset + nameLength)], as: UTF8.self)
            offset += nameLength
            let valueLength = Int(u32(bytes, offset))
            offset += 4
            guard valueLength <= bytes.count - offset else { throw damaged("its KDF parameters are truncated") }
            values[name] = Array(bytes[offset..<(offset + valueLength)])
            offset += valueLength
        }
    }

    // MARK: - Keys

    private static let aesKDF3 = uuid("c9d9f39a-628a-4460-bf74-0d08c18a4fea")
    private static let aesKDF4 = uuid("7c02bb82-79a7-4ac0-927d-114a00648238")
    private static let argon2d = uuid("ef636ddf-8c29-444b-91f7-a9a403e30a0c")
    private static let argon2id = uuid("9e298b19-56db-4773-b23d-fc3ec6f0a1e6")
    private static let aes256 = uuid("31c1f2e6-bf71-4350-be58-05216afc5aff")
    private static let chaCha20 = uuid("d6038a2b-8b6f-4cb5-a524-339a31dbb59a")
    private static let twofish = uuid("ad68f29f-576f-4bb9-a36a-d47af965346c")

    /// SHA-256 over the raw keys: SHA-256 of the password, then the key file's key.
    package static func compositeKey(_ key: Key) -> [UInt8] {
        var parts: [UInt8] = []
        if let password = key.password { parts += Gcrypt.sha256(Array(password)) }
        if let file = key.keyFile { parts += keyFileKey(Array(file)) }
        defer { parts.wipe() }
        return Gcrypt.sha256(parts)
    }

    /// The 32-byte key of a key file: KeePass's XML (1.0: base64; 2.0: hex, with a hash to
    /// check), 32 raw bytes, 64 hex digits, or else the SHA-256 of the whole file.
    private static func keyFileKey(_ file: [UInt8]) -> [UInt8] {
        if let root = try? XMLReader.parse(file), root.name == "KeyFile", let data = root.child("Key")?.child("Data") {
            let version = root.child("Meta")?.child("Version")?.text.trimmingWhitespace ?? ""
            if version.hasPrefix("1.") {
                if let key = Data(base64Encoded: data.text.trimmingWhitespace) { return Array(key) }
            } else if version.hasPrefix("2.") {
                let hex = data.text.filter { !$0.isWhitespace }
                if let key = hexBytes(hex) {
                    let hash = data.attributes["Hash"].flatMap { hexBytes($0) }
                    if hash == nil || hash! == Array(Gcrypt.sha256(key).prefix(4)) { return key }
                }
            }
        }
        if file.count == 32 { return file }
        if file.count == 64, let key = hexBytes(String(decoding: file, as: UTF8.self)) { return key }
        return Gcrypt.sha256(file)
    }

    /// The KDF's output for the composite key.
    private static func transform(_ composite: [UInt8], header: Header, limits: Limits) throws(CommandLineError) -> SecureBytes {
        do {
            if header.major == 3 {
                guard header.transformSeed.count == 32 else { throw damaged("its transform seed is malformed") }
                guard header.transformRounds <= limits.aesRounds else { throw unreasonable("AES-KDF rounds") }
                return try Gcrypt.aesKDF(composite, seed: header.transformSeed, rounds: header.transformRounds)
            }
            let kdf = header.kdf
            switch kdf["$UUID"] {
            case aesKDF3, aesKDF4:
                guard let seed = kdf["S"], seed.count == 32, let rounds = kdf["R"], rounds.count == 8 else {
                    throw damaged("its AES-KDF parameters are malformed")
                }
                guard u64(rounds, 0) <= limits.aesRounds else { throw unreasonable("AES-KDF rounds") }
                return try Gcrypt.aesKDF(composite, seed: seed, rounds: u64(rounds, 0))
            case argon2d, argon2id:
                guard let salt = kdf["S"], let lanes = kdf["P"], lanes.count == 4, let memory = kdf["M"], memory.count == 8,
                    let iterations = kdf["I"], iterations.count == 8, let version = kdf["V"], version.count == 4
                else { throw damaged("its Argon2 parameters are malformed") }
                guard u32(version, 0) == 0x13 else {
                    throw CommandLineError.failure("this KeePass database uses Argon2 version \(u32(version, 0)); secretctl reads version 19 (0x13)", status: .usage)
                }
                let memoryKiB = u64(memory, 0) / 1024
                guard memoryKiB <= limits.argon2MemoryKiB, u64(iterations, 0) <= limits.argon2Iterations, u32(lanes, 0) <= 256 else {
                    throw unreasonable("Argon2 parameters")
                }
                let parameters = KDFParameters(iterations: Int(u64(iterations, 0)), memoryKiB: Int(memoryKiB), lanes: Int(u32(lanes, 0)))
                return try composite.withUnsafeBytes { (password) throws(CryptoError) in
                    try Gcrypt.argon2(
                        kdf["$UUID"] == argon2d ? .argon2d : .argon2id, password: password, salt: salt, parameters: parameters,
                        secret: kdf["K"] ?? [], associatedData: kdf["A"] ?? [])
                }
            default:
                throw CommandLineError.failure("this KeePass database uses a key derivation secretctl does not know", status: .usage)
            }
        } catch let error as CryptoError {
            throw .failure("cannot derive the database key: \(error)", status: .failed)
        } catch let error as CommandLineError {
            throw error
        } catch {
            throw .failure("cannot derive the database key", status: .failed)
        }
    }

    // MARK: - The payload

    /// KDBX 4's HMAC block stream from `offset`: the blocks' data, each checked.
    private static func blocks(_ bytes: [UInt8], from offset: Int, hmacBase: [UInt8]) throws(CommandLineError) -> [UInt8] {
        var output: [UInt8] = []
        var offset = offset
        var index: UInt64 = 0
        while true {
            guard bytes.count - offset >= 36 else { throw truncated }
            let mac = Array(bytes[offset..<(offset + 32)])
            let size = Int(Int32(bitPattern: u32(bytes, offset + 32)))
            guard size >= 0 else { throw damaged("block \(index) has a negative size") }
            guard size <= bytes.count - offset - 36 else { throw truncated }
            let block = Array(bytes[(offset + 36)..<(offset + 36 + size)])
            let expected = try hmac(blockIndex: index, base: hmacBase, [le(index), Array(bytes[(offset + 32)..<(offset + 36)]), block])
            guard constantTimeEquals(expected, mac) else { throw damaged("block \(index) fails its check") }
            offset += 36 + size
            if size == 0 { break }
            output += block
            index += 1
        }
        return output
    }

    /// KDBX 3.1's hashed block stream from `offset`: u32 index, SHA-256, u32 size, data.
    private static func hashedBlocks(_ bytes: [UInt8], from offset: Int) throws(CommandLineError) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)  // never reallocated: no copy of plain text left behind
        var complete = false
        defer { if !complete { output.wipe() } }
        var offset = offset
        var index: UInt32 = 0
        while true {
            guard bytes.count - offset >= 40 else { throw truncated }
            guard u32(bytes, offset) == index else { throw damaged("block \(index) is out of order") }
            let hash = Array(bytes[(offset + 4)..<(offset + 36)])
            let size = Int(u32(bytes, offset + 36))
            guard size <= bytes.count - offset - 40 else { throw truncated }
            var block = Array(bytes[(offset + 40)..<(offset + 40 + size)])
            defer { block.wipe() }
            offset += 40 + size
            if size == 0 {
                guard hash.allSatisfy({ $0 == 0 }) else { throw damaged("its last block is malformed") }
                break
            }
            guard Gcrypt.sha256(block) == hash else { throw damaged("block \(index) fails its check") }
            output += block
            index += 1
        }
        complete = true
        return output
    }

    private static func decrypt(_ encrypted: [UInt8], header: Header, key: [UInt8]) throws(CommandLineError) -> [UInt8] {
        let plain: SecureBytes
        switch header.cipher {
        case aes256, twofish:
            guard header.iv.count == 16 else { throw damaged("its encryption IV is malformed") }
            do throws(CryptoError) {
                plain = try Gcrypt.decryptCBC(header.cipher == aes256 ? .aes256 : .twofish, encrypted, key: key, iv: header.iv)
            } catch {
                // With the MACs checked (KDBX 4) bad padding is a damaged file; in 3.1 it is
                // the usual sign of a wrong key.
                guard case .invalidInput = error else { throw .failure("cannot decrypt the database: \(error)", status: .failed) }
                throw header.major == 4 ? damaged("its payload does not decrypt") : wrongKey
            }
        case chaCha20:
            guard header.iv.count == 12 else { throw damaged("its encryption IV is malformed") }
            plain = SecureBytes(encrypted)
            do throws(CryptoError) {
                try applying(try Gcrypt.KeyStream(.chaCha20, key: key, nonce: header.iv), to: plain)
            } catch {
                throw .failure("cannot decrypt the database: \(error)", status: .failed)
            }
        default:
            throw .failure("this KeePass database uses a cipher secretctl does not know", status: .usage)
        }
        return plain.withBytes { Array($0) }
    }

    /// XORs the stream into `bytes`.
    private static func applying(_ stream: Gcrypt.KeyStream, to bytes: SecureBytes) throws(CryptoError) {
        var failure: CryptoError?
        bytes.withMutableBytes { buffer in
            do throws(CryptoError) { try stream.apply(buffer) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    private static func gunzip(_ bytes: [UInt8]) throws(CommandLineError) -> [UInt8] {
        do {
            return try bytes.withUnsafeBytes { (buffer) throws(Zlib.Failure) in try Zlib.gunzip(buffer, limit: maximumPayload) }
        } catch let error as Zlib.Failure {
            throw damaged("its compressed payload cannot be read: \(error.message)")
        } catch {
            throw damaged("its compressed payload cannot be read")
        }
    }

    /// KDBX 4's inner header: the inner stream and its key (attachments are skipped); returns
    /// the stream and where the XML starts.
    private static func innerHeader(_ bytes: [UInt8]) throws(CommandLineError) -> (Gcrypt.KeyStream?, Int) {
        var offset = 0
        var id: UInt32 = 0
        var key: [UInt8] = []
        defer { key.wipe() }
        while true {
            guard bytes.count - offset >= 5 else { throw damaged("its inner header is truncated") }
            let field = bytes[offset]
            let size = Int(u32(bytes, offset + 1))
            offset += 5
            guard size <= bytes.count - offset else { throw damaged("its inner header is truncated") }
            let value = Array(bytes[offset..<(offset + size)])
            offset += size
            switch field {
            case 0: return (try innerStream(id: id, key: key), offset)
            case 1:
                guard value.count == 4 else { throw damaged("its inner stream id is malformed") }
                id = u32(value, 0)
            case 2: key = value
            default: break  // 3: an attachment
            }
        }
    }

    /// The inner stream for protected values: 2 Salsa20, 3 ChaCha20, 0 none.
    private static func innerStream(id: UInt32, key: [UInt8]) throws(CommandLineError) -> Gcrypt.KeyStream? {
        do {
            switch id {
            case 0: return nil
            case 2:
                var streamKey = Gcrypt.sha256(key)
                defer { streamKey.wipe() }
                let nonce: [UInt8] = [0xE8, 0x30, 0x09, 0x4B, 0x97, 0x20, 0x5D, 0x2A]
                return try Gcrypt.KeyStream(.salsa20, key: streamKey, nonce: nonce)
            case 3:
                var hash = Gcrypt.sha512([key])
                defer { hash.wipe() }
                var streamKey = Array(hash[0..<32])
                defer { streamKey.wipe() }
                return try Gcrypt.KeyStream(.chaCha20, key: streamKey, nonce: Array(hash[32..<44]))
            default:
                throw CommandLineError.failure("this KeePass database protects its values with a stream secretctl does not know (\(id))", status: .usage)
            }
        } catch let error as CryptoError {
            throw .failure("cannot read the protected values: \(error)", status: .failed)
        } catch let error as CommandLineError {
            throw error
        } catch {
            throw .failure("cannot read the protected values", status: .failed)
        }
    }

    // MARK: - Errors

    private static var wrongKey: CommandLineError {
        .failure("wrong password (or key file) for this KeePass database; nothing was imported", status: .accessDenied)
    }

    private static var truncated: CommandLineError { damaged("it is truncated") }

    private static func damaged(_ what: String) -> CommandLineError {
        .failure("this KeePass database is damaged: \(what); nothing was imported", status: .usage)
    }

    private static func unreasonable(_ what: String) -> CommandLineError {
        .failure("this KeePass database asks for \(what) beyond what secretctl allows; nothing was imported", status: .usage)
    }

    // MARK: - Bytes

    private static func hmac(blockIndex: UInt64, base: [UInt8], _ parts: [[UInt8]]) throws(CommandLineError) -> [UInt8] {
        let key = SecureBytes(Gcrypt.sha512([le(blockIndex), base]))
        let joined = parts.reduce([], +)
        do {
            let mac = try joined.withUnsafeBytes { try Gcrypt.hmacSHA256(key: key, message: [$0]) }
            return mac.withBytes { Array($0) }
        } catch {
            throw .failure("cannot check the database: \(error)", status: .failed)
        }
    }

    private static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static func u16(_ bytes: [UInt8], _ offset: Int) -> UInt16 { UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8 }

    private static func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }

    private static func u64(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * $1) }
    }

    private static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

    private static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...(index + 1)], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    private static func uuid(_ text: String) -> [UInt8] { hexBytes(text.filter { $0 != "-" })! }
}
