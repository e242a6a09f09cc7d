public import FoundationEssentials
import Glibc
import SecretCrypto
import SecretStore
public import TPMSealing

/// The login keyring's TPM slot: its master key sealed (AES-256-GCM) under a random slot key,
/// which is sealed to the machine's TPM 2.0 (TPMSealing), optionally bound to PCRs. Kept in
/// the file ``fileName`` of the data directory (0600), so that secretd can unlock the keyring
/// at start with no password (`secretctl tpm enroll`).
///
/// The file alone opens nothing: the slot key comes only from the TPM that sealed it, and
/// with PCRs only while they hold their values of the enrolment. The sealed master key is
/// bound to its collection's random identity, so the file of another keyring does not open
/// this one.
package struct TPMSlot: Equatable {
    /// The file in the data directory.
    package static let fileName = "login-keyring.tpm"
    /// The first bytes of the file, with its version.
    private static let magic = Array("secretd tpm slot\n".utf8) + [1]

    /// The slot key, sealed to the TPM.
    package let sealedSlotKey: TPMSealedKey
    /// The master key, sealed under the slot key.
    package let wrappedMasterKey: [UInt8]

    /// The PCRs the slot is bound to (none: the TPM alone).
    package var pcrs: [Int] { sealedSlotKey.pcrs }

    /// What made a slot unusable, for the log and `secretctl tpm status`.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// The TPM said no, or is not there.
        case tpm(TPMError)
        /// The file is not a slot, or not this keyring's.
        case malformed(String)
        /// The file cannot be read or written.
        case io(String)

        package var description: String {
            switch self {
            case .tpm(.policyMismatch):
                return "a PCR the slot is bound to changed since it was enrolled (another boot chain or firmware); "
                    + "unlock with the password, then enroll again (secretctl tpm enroll)"
            case .tpm(.otherTPM):
                return "the slot was sealed by another TPM (another machine, or a cleared TPM); "
                    + "unlock with the password, then enroll again (secretctl tpm enroll)"
            case .tpm(let error): return "\(error)"
            case .malformed(let what):
                return "\(TPMSlot.fileName) is not a TPM slot of this keyring: \(what); "
                    + "unlock with the password, then enroll again (secretctl tpm enroll)"
            case .io(let what): return what
            }
        }
    }

    /// Seals `masterKey` (of `collection`) under a new slot key sealed to the TPM at `tcti`.
    static func enroll(
        masterKey: SecureBytes, of collection: Store.CollectionRecord, pcrs: [Int], tcti: String?
    ) throws(Failure) -> TPMSlot {
        let slotKey = Gcrypt.randomKey()
        let sealed: TPMSealedKey
        do {
            sealed = try TPM2.seal(slotKey, pcrs: pcrs, tcti: tcti)
        } catch {
            throw .tpm(error)
        }
        do {
            let wrapped = try masterKey.withBytes { (bytes) throws(CryptoError) in
                try Gcrypt.seal(bytes, key: slotKey, associatedData: associatedData(collection))
            }
            return TPMSlot(sealedSlotKey: sealed, wrappedMasterKey: wrapped)
        } catch {
            throw .io("cannot seal the master key: \(error)")
        }
    }

    /// The master key of `collection`, from the TPM at `tcti`.
    func open(for collection: Store.CollectionRecord, tcti: String?) throws(Failure) -> SecureBytes {
        let slotKey: SecureBytes
        do {
            slotKey = try TPM2.unseal(sealedSlotKey, tcti: tcti)
        } catch {
            throw .tpm(error)
        }
        do {
            let key = try Gcrypt.open(wrappedMasterKey, key: slotKey, associatedData: Self.associatedData(collection))
            guard key.count == Gcrypt.keyLength else { throw Failure.malformed("the sealed master key has the wrong size") }
            return key
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .malformed("the master key does not open (the slot of another keyring, or altered)")
        }
    }

    /// What the sealed master key is bound to: its purpose and its collection.
    private static func associatedData(_ collection: Store.CollectionRecord) -> [UInt8] {
        Array("secretd tpm slot v1".utf8) + collection.uuid
    }

    // MARK: - The file

    /// The file's bytes: the magic with its version, then the sealed slot key and the wrapped
    /// master key, each preceded by its length (UInt32, big-endian).
    package var serialized: [UInt8] {
        func length(_ bytes: [UInt8]) -> [UInt8] { withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { Array($0) } }
        let sealed = sealedSlotKey.serialized
        return Self.magic + length(sealed) + sealed + length(wrappedMasterKey) + wrappedMasterKey
    }

    /// The slot in `bytes`; `.malformed` for anything else.
    package init(serialized bytes: [UInt8]) throws(Failure) {
        guard bytes.starts(with: Self.magic) else { throw .malformed("it does not start as one") }
        var offset = Self.magic.count
        func part() throws(Failure) -> [UInt8] {
            guard bytes.count - offset >= 4 else { throw .malformed("it is truncated") }
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            offset += 4
            guard bytes.count - offset >= length else { throw .malformed("it is truncated") }
            defer { offset += length }
            return Array(bytes[offset..<offset + length])
        }
        let sealed = try part()
        let wrapped = try part()
        guard offset == bytes.count else { throw .malformed("bytes follow its end") }
        do {
            sealedSlotKey = try TPMSealedKey(serialized: sealed)
        } catch {
            throw .malformed("\(error)")
        }
        wrappedMasterKey = wrapped
    }

    private init(sealedSlotKey: TPMSealedKey, wrappedMasterKey: [UInt8]) {
        self.sealedSlotKey = sealedSlotKey
        self.wrappedMasterKey = wrappedMasterKey
    }

    /// The slot kept in `directory`, or nil when there is none.
    static func load(from directory: URL) throws(Failure) -> TPMSlot? {
        let path = directory.appendingPathComponent(fileName).path
        guard let data = FileManager.default.contents(atPath: path) else {
            if access(path, F_OK) != 0 { return nil }
            throw .io("cannot read \(path)")
        }
        return try TPMSlot(serialized: Array(data))
    }

    /// Writes the slot into `directory` (PrivateFile: 0600, flushed, renamed over the old one),
    /// so a crash leaves either slot whole.
    func save(in directory: URL) throws(Failure) {
        let url = directory.appendingPathComponent(Self.fileName)
        if let reason = PrivateFile.replace(url, with: serialized) { throw .io("cannot write \(url.path): \(reason)") }
    }

    /// Removes the slot from `directory`; false when there was none.
    static func remove(from directory: URL) throws(Failure) -> Bool {
        let path = directory.appendingPathComponent(fileName).path
        guard unlink(path) == 0 else {
            if errno == ENOENT { return false }
            throw .io("cannot remove \(path): \(String(cString: strerror(errno)))")
        }
        PrivateFile.syncDirectory(of: URL(fileURLWithPath: path))
        return true
    }
}
