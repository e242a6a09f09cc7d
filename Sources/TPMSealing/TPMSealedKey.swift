/// A secret sealed by a TPM: the sealed object's public and private areas as the TPM returned
/// them, and the PCRs its policy binds. Only the TPM that sealed it can unseal it; the bytes
/// themselves reveal nothing of the secret, so they may be stored in the clear.
///
/// The serialized form (``serialized``), version 1:
///
///     "KTPM"                4 bytes, the magic
///     version               1 byte, 1
///     PCR count n           1 byte, 0 to 24
///     PCRs                  n bytes, strictly ascending, each 0 to 23 (SHA-256 bank)
///     TPM2B_PUBLIC          the sealed object's public area in TPM wire form (2-byte size first)
///     TPM2B_PRIVATE         its private area, encrypted by the TPM (2-byte size first)
///
/// and nothing after. Multi-byte sizes are big-endian, as on the TPM's wire.
public struct TPMSealedKey: Equatable, Sendable {
    /// The SHA-256 PCRs whose values at sealing time the key is bound to, ascending; empty
    /// when it is not bound to any.
    public let pcrs: [Int]
    /// The TPM2B_PUBLIC, marshalled.
    let publicArea: [UInt8]
    /// The TPM2B_PRIVATE, marshalled.
    let privateArea: [UInt8]

    /// The first bytes of every serialized key.
    static let magic: [UInt8] = Array("KTPM".utf8)
    /// The format version this code writes and reads.
    static let version: UInt8 = 1

    /// A key from its parts, which ``TPM2`` has already checked.
    init(pcrs: [Int], publicArea: [UInt8], privateArea: [UInt8]) {
        self.pcrs = pcrs
        self.publicArea = publicArea
        self.privateArea = privateArea
    }

    /// Parses a key written by ``serialized``.
    /// - Throws: ``TPMError/malformed(_:)`` for another magic or version, a PCR list that is
    ///   not ascending within 0 to 23, TPM structures that are truncated or do not parse, an
    ///   object that is not a sealed one or whose policy does not fit its PCR list, and bytes
    ///   after the end.
    public init(serialized bytes: [UInt8]) throws(TPMError) {
        let header = Self.magic.count + 2
        guard bytes.count >= header, bytes.starts(with: Self.magic) else { throw .malformed("no TPM-sealed key header") }
        guard bytes[Self.magic.count] == Self.version else {
            throw .malformed("unsupported version \(bytes[Self.magic.count])")
        }
        let count = Int(bytes[Self.magic.count + 1])
        guard count <= TPM2.pcrRange.count, bytes.count >= header + count else { throw .malformed("truncated PCR list") }
        let pcrs = bytes[header..<header + count].map(Int.init)
        guard pcrs.allSatisfy(TPM2.pcrRange.contains), zip(pcrs, pcrs.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw .malformed("the PCR list is not ascending within 0 to 23")
        }
        var offset = header + count
        let publicArea = try Self.sized(bytes, &offset, "public area")
        let privateArea = try Self.sized(bytes, &offset, "private area")
        guard offset == bytes.count else { throw .malformed("\(bytes.count - offset) bytes after the private area") }
        try TPM2.checkSealedObject(publicArea: publicArea, privateArea: privateArea, pcrs: pcrs)
        self.init(pcrs: pcrs, publicArea: publicArea, privateArea: privateArea)
    }

    /// The bytes ``init(serialized:)`` reads back into an equal key.
    public var serialized: [UInt8] {
        Self.magic + [Self.version, UInt8(pcrs.count)] + pcrs.map { UInt8($0) } + publicArea + privateArea
    }

    /// The TPM2B at `offset` in `bytes`, its 2-byte size included; moves `offset` past it.
    private static func sized(_ bytes: [UInt8], _ offset: inout Int, _ what: String) throws(TPMError) -> [UInt8] {
        guard bytes.count - offset >= 2 else { throw .malformed("truncated \(what)") }
        let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
        guard length > 0 else { throw .malformed("empty \(what)") }
        guard bytes.count - offset - 2 >= length else { throw .malformed("truncated \(what)") }
        defer { offset += 2 + length }
        return Array(bytes[offset..<offset + 2 + length])
    }
}
