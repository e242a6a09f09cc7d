import FoundationEssentials
import Glibc

/// A private copy of a secret's bytes that is wiped before its memory is freed.
///
/// The library copies a caller's value into one of these right before handing it to libsecret,
/// so the only copies it makes itself never outlive the call.
final class SecretBuffer {
    /// The bytes; valid until the buffer is released.
    let bytes: UnsafeMutableRawBufferPointer

    /// Copies `source` into freshly allocated memory.
    init(copying source: UnsafeRawBufferPointer) {
        bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(source.count, 1), alignment: 1)
        if let base = source.baseAddress, source.count > 0 {
            bytes.baseAddress!.copyMemory(from: base, byteCount: source.count)
        }
        count = source.count
    }

    /// The number of secret bytes (the allocation may be one byte larger for an empty secret).
    let count: Int

    /// The secret bytes as a read-only view.
    var view: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[0..<count]) }

    deinit {
        SecretBuffer.wipe(bytes)
        bytes.deallocate()
    }

    /// Overwrites `memory` with zeros in a way the compiler may not optimise away.
    static func wipe(_ memory: UnsafeMutableRawBufferPointer) {
        guard let base = memory.baseAddress, memory.count > 0 else { return }
        explicit_bzero(base, memory.count)
    }

    /// Overwrites the bytes of a `Data` the library created itself (for example encoded JSON).
    static func wipe(_ data: inout Data) {
        data.withUnsafeMutableBytes { wipe($0) }
    }
}
