package import FoundationEssentials
import Glibc
import KeychainCore
package import SecretCrypto

/// The encrypted export format (version 1), documented in secretctl(1):
///
///     "secretctl-export" (16 bytes) | version (1 byte) | Argon2id iterations, memory KiB,
///     lanes (3 × big-endian UInt32) | salt (16 bytes) | AES-256-GCM(nonce ‖ ciphertext ‖ tag)
///
/// The key is Argon2id(passphrase, salt); the header is the associated data, so no field can be
/// changed without the file failing to open. The plaintext is JSON: `{"items": [{"label",
/// "attributes", "secret"}]}` with the secret in base64.
package enum ExportFile {
    /// The file's first 16 bytes.
    package static let magic = Array("secretctl-export".utf8)
    /// The format version this secretctl writes and reads.
    package static let version: UInt8 = 1
    /// The header's length: magic, version, KDF parameters, salt.
    package static let headerLength = 16 + 1 + 12 + 16

    /// One exported item.
    package struct Item: Codable, Equatable {
        /// The item's label.
        package var label: String
        /// The item's attributes.
        package var attributes: [String: String]
        /// The secret's bytes.
        package var secret: Data

        /// An item with these parts.
        package init(label: String, attributes: [String: String], secret: Data) {
            self.label = label
            self.attributes = attributes
            self.secret = secret
        }
    }

    /// Whether `data` starts like an export file.
    package static func isExport(_ data: Data) -> Bool { data.count >= headerLength && Array(data.prefix(16)) == magic }

    /// Seals `items` under `passphrase`.
    package static func seal(_ items: [Item], passphrase: Data, parameters: KDFParameters = .standard) throws(CommandLineError) -> Data {
        var json = json(items)
        defer { json.wipe() }
        let salt = Gcrypt.randomBytes(count: 16)
        var header = magic + [version]
        for value in [parameters.iterations, parameters.memoryKiB, parameters.lanes] { header += bigEndian(UInt32(value)) }
        header += salt
        do {
            let key = try passphrase.withUnsafeBytes { bytes throws(CryptoError) in
                try Gcrypt.argon2id(password: bytes, salt: salt, parameters: parameters)
            }
            let sealed = try json.withUnsafeBytes { bytes throws(CryptoError) in
                try Gcrypt.seal(bytes, key: key, associatedData: header)
            }
            return Data(header + sealed)
        } catch {
            throw .failure("cannot encrypt the export: \(error)", status: .failed)
        }
    }

    /// Opens an export with `passphrase`; a wrong passphrase or a damaged file is an error.
    package static func open(_ data: Data, passphrase: Data) throws(CommandLineError) -> [Item] {
        let bytes = Array(data)
        guard isExport(data) else { throw .failure("not a secretctl export file", status: .usage) }
        guard bytes[16] == version else {
            throw .failure("export format version \(bytes[16]) is newer than this secretctl reads (\(version))", status: .usage)
        }
        func number(_ offset: Int) -> Int { bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) } }
        // Checked before any work: a hostile file could ask for gigabytes and minutes.
        guard let parameters = KDFParameters(checkingIterations: number(17), memoryKiB: number(21), lanes: number(25))
        else {
            throw .failure(
                "the export file's key parameters are out of range (at most \(KDFParameters.maximumIterations) passes, "
                    + "\(KDFParameters.maximumMemoryKiB / 1024) MiB, \(KDFParameters.maximumLanes) lanes); "
                    + "the file is damaged, or was not written by secretctl",
                status: .usage)
        }
        let salt = Array(bytes[29..<45])
        let header = Array(bytes[0..<headerLength])
        let plaintext: SecureBytes
        do {
            let key = try passphrase.withUnsafeBytes { raw throws(CryptoError) in
                try Gcrypt.argon2id(password: raw, salt: salt, parameters: parameters)
            }
            plaintext = try Gcrypt.open(Array(bytes[headerLength...]), key: key, associatedData: header)
        } catch {
            throw .failure("wrong passphrase, or the file is damaged; nothing was imported", status: .accessDenied)
        }
        return try plaintext.withBytes { (raw) throws(CommandLineError) in try items(fromJSON: UnsafeRawBufferPointer(raw)) }
    }

    /// The items of an export's decrypted JSON payload (``PayloadReader``).
    package static func items(fromJSON json: Data) throws(CommandLineError) -> [Item] {
        try json.withUnsafeBytes { raw in Result { () throws(CommandLineError) in try items(fromJSON: raw) } }.get()
    }

    /// The items of the payload in `json`, read in place.
    private static func items(fromJSON json: UnsafeRawBufferPointer) throws(CommandLineError) -> [Item] {
        var reader = PayloadReader(json)
        do {
            return try reader.items()
        } catch {
            throw .failure("the export's contents are damaged; nothing was imported", status: .usage)
        }
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }
}
