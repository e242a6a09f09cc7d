public import SecretCrypto

// KWallet's wallet file (kwalletd's backend: kwalletbackend.cc, backendpersisthandler.cpp,
// cbc.cc), `$XDG_DATA_HOME/kwalletd/NAME.kwl`, all numbers big-endian:
//
//   "KWALLET\n\r\0\r\n", then 4 bytes: major 0; minor 0 (key from the old SHA-1 hash) or 1
//       (PBKDF2-HMAC-SHA512 of the password and `NAME.salt`, 50,000 iterations, 56 bytes);
//       cipher 0 (Blowfish, read as ECB: files older than KDE 4.13), 3 (Blowfish-CBC, zero IV)
//       or 2 (GPG); hash 0 (SHA-1) or 2 (PBKDF2-SHA512), as the minor version says
//   the clear index: folder count; per folder the MD5 of its name, its entry count and the
//       MD5 of each entry's key
//   the rest, encrypted whole: 8 random bytes; the length n of the data; n bytes of data;
//       random bytes up to a whole block; the SHA-1 of the data (20 bytes, ending the file),
//       computed by kwalletd's own SHA-1, which differs from the standard one (KWalletSHA1)
//
// The data is a QDataStream (Qt 5): until its end, a folder's name (QString: byte length or
// 0xffffffff for none, then UTF-16BE), its entry count, and per entry its key (QString), type
// (1 password, 2 stream, 3 map) and value (QByteArray: length or 0xffffffff, bytes). A
// password's value is itself a QString; a map's a count then that many QString name, value
// pairs; a stream's is the bytes as written.

extension KWalletFile {
    /// The first 12 bytes of a wallet.
    static let magic: [UInt8] = Array("KWALLET\n\r\u{0}\r\n".utf8)
    /// PBKDF2-SHA512's iteration count and key length (kwalletbackend.h).
    static let pbkdf2Iterations = 50_000
    static let keyLength = 56
}

/// Reads KWallet's wallet files with no kwalletd running: `~/.local/share/kwalletd/NAME.kwl`,
/// with the salt of its key in `NAME.salt` beside it, as kwalletd 5 and 6 read them (see the
/// layout above). GPG-encrypted wallets are refused.
public enum KWalletFile {
    /// The file name ending of wallets.
    public static let fileExtension = "kwl"
    /// The file name ending of their salt.
    public static let saltExtension = "salt"

    /// Whether `data` starts as a wallet does.
    public static func isWallet(_ data: [UInt8]) -> Bool {
        data.starts(with: magic)
    }

    /// How many entries the wallet holds, read from its clear index (no password needed);
    /// nil when the header or the index is damaged.
    public static func entryCount(_ data: [UInt8]) -> Int? {
        guard isWallet(data), data.count >= magic.count + 4 else { return nil }
        return try? data.withUnsafeBytes { (raw) throws(KWalletError) -> Int in
            var reader = ByteReader(raw, from: magic.count + 4)
            return try readIndex(&reader)
        }
    }

    /// Whether the wallet's key is derived with its salt file (format 0.1).
    public static func needsSalt(_ data: [UInt8]) -> Bool {
        data.count > magic.count + 1 && data[magic.count + 1] == 1
    }

    /// Reads the wallet in `data`, the whole file, with `password` and the contents of its
    /// salt file (nil when there is none; only format 0.1 needs it).
    public static func read(_ data: [UInt8], salt: [UInt8]?, password: SecureBytes) throws(KWalletError) -> KWallet {
        try read(data, key: key(of: data, salt: salt, password: password))
    }

    /// The Blowfish key of the wallet in `data`, from `password` (and `salt`, for format 0.1).
    package static func key(of data: [UInt8], salt: [UInt8]?, password: SecureBytes) throws(KWalletError) -> SecureBytes {
        guard isWallet(data) else { throw .notAWallet }
        let (_, legacyKey) = try readVersion(data)
        do {
            if legacyKey { return KWalletSHA1.legacyKey(password: password) }
            guard let salt else { throw KWalletError.saltRequired }
            guard !salt.isEmpty else { throw KWalletError.damaged("its salt file is empty") }
            return try Gcrypt.pbkdf2SHA512(password: password, salt: salt, iterations: pbkdf2Iterations, length: keyLength)
        } catch let error as KWalletError {
            throw error
        } catch {
            throw .damaged("\(error)")
        }
    }

    /// Reads the wallet in `data` with its Blowfish key.
    package static func read(_ data: [UInt8], key: SecureBytes) throws(KWalletError) -> KWallet {
        guard isWallet(data) else { throw .notAWallet }
        let (mode, _) = try readVersion(data)
        let encrypted = data[try indexEnd(data)...]
        guard encrypted.count % 8 == 0, encrypted.count >= 32 else {
            throw .damaged("its encrypted part has \(encrypted.count) bytes, not whole 8-byte blocks (cut short?)")
        }
        let plaintext: SecureBytes
        do {
            plaintext = try Gcrypt.decryptBlowfishBlocks(encrypted, key: key, mode: mode)
        } catch {
            // libgcrypt refuses a weak Blowfish key, which kwalletd refuses too: no password gives one.
            throw .wrongPassword
        }
        return try plaintext.withBytes { (decrypted) throws(KWalletError) -> KWallet in
            // 8 random bytes, the length, the data, fill, the SHA-1 of the data.
            let length = decrypted[8..<12].reduce(0) { $0 << 8 | Int($1) }
            guard length <= decrypted.count - 32 else { throw .wrongPassword }
            let body = UnsafeRawBufferPointer(rebasing: decrypted[12..<(12 + length)])
            var check = [UInt8](repeating: 0, count: 20)
            check.withUnsafeMutableBytes { KWalletSHA1.hash(body, into: $0.baseAddress!) }
            guard check.elementsEqual(decrypted[(decrypted.count - 20)...]) else {
                throw .damaged("its check sum does not match (altered?)")
            }
            return try readData(body)
        }
    }

    /// The cipher's mode and whether the key is the old SHA-1 one, from the 4 version bytes.
    private static func readVersion(_ data: [UInt8]) throws(KWalletError) -> (Gcrypt.BlowfishMode, legacyKey: Bool) {
        guard data.count >= magic.count + 4 else { throw .damaged("it ends early (truncated?)") }
        let (major, minor, cipher, hash) = (data[12], data[13], data[14], data[15])
        guard major == 0, minor <= 1 else { throw .unsupported("format \(major).\(minor)") }
        let mode: Gcrypt.BlowfishMode
        switch cipher {
        case 0: mode = .ecb
        case 3: mode = .cbc
        case 2: throw .unsupported("it is encrypted with GPG (open it in KWallet and move its entries to a wallet with a password)")
        default: throw .unsupported("cipher \(cipher)")
        }
        guard hash == 0 || hash == 2 else { throw .unsupported("hash \(hash)") }
        // kwalletd takes the key by the minor version; it writes hash 2 with minor 1 and 0 with 0.
        return (mode, minor == 0)
    }

    /// Where the clear index ends and the encrypted part starts.
    private static func indexEnd(_ data: [UInt8]) throws(KWalletError) -> Int {
        do {
            return try data.withUnsafeBytes { raw in
                var reader = ByteReader(raw, from: magic.count + 4)
                _ = try readIndex(&reader)
                return reader.offset
            }
        } catch let error as KWalletError {
            throw error
        } catch {
            throw .damaged("\(error)")
        }
    }

    /// Skips the clear index and returns how many entries it counts.
    private static func readIndex(_ reader: inout ByteReader) throws(KWalletError) -> Int {
        try typed { () throws(GnomeKeyringError) -> Int in
            let folders = try reader.uint32()
            guard folders <= 0xffff, Int(folders) <= reader.remaining / 20 else { throw .damaged("its index claims \(folders) folders") }
            var entries = 0
            for _ in 0..<folders {
                _ = try reader.take(16)
                let count = Int(try reader.uint32())
                guard count <= reader.remaining / 16 else { throw .damaged("its index claims \(count) entries in a folder") }
                _ = try reader.take(16 * count)
                entries += count
            }
            return entries
        }
    }

    /// The folders and entries of the decrypted data (its QDataStream, without the random
    /// block, length and check sum around it).
    package static func readData(_ body: UnsafeRawBufferPointer) throws(KWalletError) -> KWallet {
        try typed { () throws(GnomeKeyringError) -> KWallet in
            var reader = ByteReader(body)
            var wallet = KWallet(folders: [], entries: [])
            while reader.remaining > 0 {
                let folder = try string(&reader)
                let count = Int(try reader.uint32())
                guard count <= reader.remaining / 12 else { throw .damaged("a folder of \(count) entries") }
                wallet.folders.append(folder)
                for _ in 0..<count {
                    let key = try string(&reader)
                    let rawType = Int32(bitPattern: try reader.uint32())
                    let value = try reader.byteArray()
                    // kwalletd drops an entry of an unknown type as it loads the file.
                    guard let type = KWallet.EntryType(rawValue: rawType) else { continue }
                    let secret: SecureBytes
                    switch type {
                    case .password: secret = try passwordText(value)
                    case .stream: secret = SecureBytes(copying: value)
                    case .map: secret = try mapJSON(value)
                    }
                    wallet.entries.append(KWallet.Entry(folder: folder, key: key, type: type, secret: secret))
                }
            }
            return wallet
        }
    }

    /// A QString as text (an absent one as empty).
    private static func string(_ reader: inout ByteReader) throws(GnomeKeyringError) -> String {
        var scalars = String.UnicodeScalarView()
        forEachScalar(try qstring(&reader)) { scalars.append($0) }
        return String(scalars)
    }

    /// A QString's UTF-16BE bytes (none for an absent one).
    private static func qstring(_ reader: inout ByteReader) throws(GnomeKeyringError) -> UnsafeRawBufferPointer {
        let bytes = try reader.byteArray()
        guard bytes.count % 2 == 0 else { throw .damaged("a string of an odd number of bytes") }
        return bytes
    }

    /// A password entry's value, a serialized QString, as UTF-8.
    private static func passwordText(_ value: UnsafeRawBufferPointer) throws(GnomeKeyringError) -> SecureBytes {
        guard value.count > 0 else { return SecureBytes(count: 0) }
        var reader = ByteReader(value)
        let text = try qstring(&reader)
        guard reader.remaining == 0 else { throw .damaged("a password entry with bytes after its text") }
        return utf8(text)
    }

    /// A map entry's value, a serialized `QMap<QString, QString>`, as the compact JSON object
    /// that KWallet's Secret Service bridge gives (names sorted by their UTF-16 code units).
    private static func mapJSON(_ value: UnsafeRawBufferPointer) throws(GnomeKeyringError) -> SecureBytes {
        guard value.count > 0 else { return SecureBytes(Array("{}".utf8)) }
        var reader = ByteReader(value)
        let count = Int(try reader.uint32())
        guard count <= reader.remaining / 8 else { throw .damaged("a map entry of \(count) values") }
        var pairs: [(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)] = []
        for _ in 0..<count {
            let name = try qstring(&reader)
            let text = try qstring(&reader)
            // Big-endian bytes compare as their code units do. A repeated name: the later value.
            pairs.removeAll { $0.name.elementsEqual(name) }
            pairs.append((name, text))
        }
        guard reader.remaining == 0 else { throw .damaged("a map entry with bytes after its values") }
        pairs.sort { $0.name.lexicographicallyPrecedes($1.name) }
        func write(_ emit: (UInt8) -> Void) {
            emit(UInt8(ascii: "{"))
            for (index, pair) in pairs.enumerated() {
                if index > 0 { emit(UInt8(ascii: ",")) }
                jsonString(pair.name, emit)
                emit(UInt8(ascii: ":"))
                jsonString(pair.value, emit)
            }
            emit(UInt8(ascii: "}"))
        }
        var length = 0
        write { _ in length += 1 }
        let json = SecureBytes(count: length)
        json.withMutableBytes { out in
            var offset = 0
            write { byte in
                out[offset] = byte
                offset += 1
            }
        }
        return json
    }

    /// UTF-16BE text as a JSON string, in UTF-8, escaping what JSON requires.
    private static func jsonString(_ text: UnsafeRawBufferPointer, _ emit: (UInt8) -> Void) {
        let hex = Array("0123456789abcdef".utf8)
        emit(UInt8(ascii: "\""))
        forEachScalar(text) { scalar in
            switch scalar {
            case "\"": emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "\""))
            case "\\": emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "\\"))
            case "\n": emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "n"))
            case "\r": emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "r"))
            case "\t": emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "t"))
            case "\u{08}": emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "b"))
            case "\u{0C}": emit(UInt8(ascii: "\\")); emit(UInt8(ascii: "f"))
            case _ where scalar.value < 0x20:
                for byte in Array("\\u00".utf8) { emit(byte) }
                emit(hex[Int(scalar.value >> 4)])
                emit(hex[Int(scalar.value & 0xf)])
            default: UTF8.encode(scalar, into: emit)
            }
        }
        emit(UInt8(ascii: "\""))
    }

    /// UTF-16BE text as UTF-8 in secure memory (an unpaired surrogate as U+FFFD).
    private static func utf8(_ text: UnsafeRawBufferPointer) -> SecureBytes {
        var length = 0
        forEachScalar(text) { length += UTF8.width($0) }
        let out = SecureBytes(count: length)
        out.withMutableBytes { buffer in
            var offset = 0
            forEachScalar(text) { scalar in
                UTF8.encode(scalar) { byte in
                    buffer[offset] = byte
                    offset += 1
                }
            }
        }
        return out
    }

    /// Calls `body` with each scalar of UTF-16BE text, U+FFFD for an unpaired surrogate.
    private static func forEachScalar(_ text: UnsafeRawBufferPointer, _ body: (Unicode.Scalar) -> Void) {
        var units = BigEndianUnits(text)
        var decoder = UTF16()
        while true {
            switch decoder.decode(&units) {
            case .scalarValue(let scalar): body(scalar)
            case .emptyInput: return
            case .error: body("\u{FFFD}")
            }
        }
    }

    /// The UTF-16 code units of big-endian bytes.
    private struct BigEndianUnits: IteratorProtocol {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        mutating func next() -> UInt16? {
            guard index + 1 < bytes.count else { return nil }
            defer { index += 2 }
            return UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1])
        }
    }

    /// `body`'s result, the byte reader's errors as this reader's.
    private static func typed<T>(_ body: () throws(GnomeKeyringError) -> T) throws(KWalletError) -> T {
        do {
            return try body()
        } catch .damaged(let why) {
            throw .damaged(why)
        } catch {
            throw .damaged("\(error)")
        }
    }
}
