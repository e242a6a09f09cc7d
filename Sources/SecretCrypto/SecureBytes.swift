internal import CGcrypt
import Glibc

/// Key material or plaintext held in libgcrypt's secure (mlocked) memory, wiped when released.
public final class SecureBytes: @unchecked Sendable {
    /// The memory; valid until the object is released.
    package let pointer: UnsafeMutableRawPointer
    /// The number of bytes.
    public let count: Int

    /// Allocates `count` zeroed bytes of secure memory.
    public init(count: Int) {
        Gcrypt.initialize()
        guard let memory = gcry_calloc_secure(1, max(count, 1)) else {
            fatalError("libgcrypt secure memory exhausted")  // gcry_calloc_secure only fails when out of memory
        }
        pointer = memory
        self.count = count
    }

    /// Copies `bytes` into secure memory.
    public convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count)
        if let base = bytes.baseAddress, bytes.count > 0 { pointer.copyMemory(from: base, byteCount: bytes.count) }
    }

    /// Copies `bytes` into secure memory (for tests and fixed inputs).
    public convenience init(_ bytes: [UInt8]) {
        self.init(count: bytes.count)
        bytes.withUnsafeBytes { pointer.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
    }

    deinit {
        explicit_bzero(pointer, max(count, 1))
        gcry_free(pointer)
    }

    /// Read-only access to the bytes.
    public func withBytes<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Mutable access to the bytes.
    package func withMutableBytes<T>(_ body: (UnsafeMutableRawBufferPointer) -> T) -> T {
        body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    /// Whether two secure buffers hold the same bytes (constant time in the length).
    public func constantTimeEquals(_ other: SecureBytes) -> Bool {
        guard count == other.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<count {
            difference |= pointer.load(fromByteOffset: index, as: UInt8.self)
                ^ other.pointer.load(fromByteOffset: index, as: UInt8.self)
        }
        return difference == 0
    }
}
