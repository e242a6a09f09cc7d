import Dispatch
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

    /// Seals `items` under `passphrase`: the file's bytes. The key is derived (about 0.15 s)
    /// on a thread of its own while the payload is written (about 0.2 s at 100,000 items) into
    /// the file's buffer, which is then sealed in place, so the file is the one copy of it.
    package static func seal(_ items: [Item], passphrase: Data, parameters: KDFParameters = .standard) throws(CommandLineError) -> [UInt8] {
        let salt = Gcrypt.randomBytes(count: 16)
        var header = magic + [version]
        for value in [parameters.iterations, parameters.memoryKiB, parameters.lanes] { header += bigEndian(UInt32(value)) }
        header += salt
        let derivation = KeyDerivation(passphrase: passphrase, salt: salt, parameters: parameters)
        var file: [UInt8] = []
        file.reserveCapacity(header.count + Gcrypt.nonceLength + jsonLength(items) + Gcrypt.tagLength)
        file += header
        file += [UInt8](repeating: 0, count: Gcrypt.nonceLength)
        appendJSON(items, to: &file)
        file += [UInt8](repeating: 0, count: Gcrypt.tagLength)
        do {
            let key = try derivation.key()
            try file.withUnsafeMutableBytes { bytes in
                Result { () throws(CryptoError) in
                    try Gcrypt.sealInPlace(UnsafeMutableRawBufferPointer(rebasing: bytes[header.count...]), key: key, associatedData: header)
                }
            }.get()
            return file
        } catch {
            file.wipe()  // it holds the payload in the clear
            throw .failure("cannot encrypt the export: \(error)", status: .failed)
        }
    }

    /// Argon2id of a passphrase, run on a thread of its own from the start (here and now when
    /// no thread can be had); ``key()`` waits for it.
    private final class KeyDerivation: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        /// Written once by the thread before `done` is signalled, read after it.
        private var result: Result<SecureBytes, CryptoError>?

        init(passphrase: Data, salt: [UInt8], parameters: KDFParameters) {
            // A copy in secure memory, so that the thread holds no reference to the caller's
            // `Data` (whose wipe would then copy it first, leaving this one unwiped).
            let password = passphrase.withUnsafeBytes { SecureBytes(copying: $0) }
            let run = { [self] in
                result = password.withBytes { bytes in
                    Result { () throws(CryptoError) in try Gcrypt.argon2id(password: bytes, salt: salt, parameters: parameters) }
                }
                done.signal()
            }
            if !DetachedThread.start(named: "secretctl-kdf", run) { run() }
        }

        /// The key, or why it could not be derived. Called once.
        func key() throws(CryptoError) -> SecureBytes {
            done.wait()
            return try result!.get()
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
