import Glibc
import Synchronization

/// Key material or plaintext held in locked memory (never swapped, left out of core dumps),
/// wiped when released.
///
/// Small buffers come from ``SecurePool``: blocks of locked pages kept out of core dumps, taken
/// and given back in constant time however many secrets are alive. Buffers of
/// ``ownPagesThreshold`` bytes or more get pages of their own, locked and kept out of core
/// dumps here too.
public final class SecureBytes: @unchecked Sendable {
    /// The memory; valid until the object is released.
    package let pointer: UnsafeMutableRawPointer
    /// The number of bytes.
    public let count: Int
    /// The length of the pages mapped for this buffer alone; 0 when it is a block of the pool.
    private let mappedLength: Int

    /// From this size on a buffer gets locked pages of its own.
    package static let ownPagesThreshold = 64 * 1024

    /// What happens, once per process, when the system refuses to lock a buffer's pages (its
    /// `RLIMIT_MEMLOCK` is used up): by default a line on standard error naming the size.
    /// The buffer is used all the same, kept out of core dumps but swappable.
    nonisolated(unsafe) public static var lockRefused: (_ bytes: Int) -> Void = { bytes in
        let line = "warning: cannot lock \(bytes) bytes of secrets in memory (RLIMIT_MEMLOCK is used up); they may be written to swap\n"
        _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    }
    private static let lockRefusalReported = Atomic<Bool>(false)

    /// Allocates `count` zeroed bytes of secure memory.
    public init(count: Int) {
        Gcrypt.initialize()
        self.count = count
        if count >= Self.ownPagesThreshold, let (memory, length) = Self.mapLockedPages(count) {
            pointer = memory
            mappedLength = length
            return
        }
        guard let memory = SecurePool.allocate(count) else {
            fatalError("no memory for a secret: mmap failed")
        }
        pointer = memory
        mappedLength = 0
    }

    /// Zeroed pages for `count` bytes, out of core dumps and locked (or, when the system
    /// refuses, reported through ``lockRefused``); nil when there is no memory to map.
    static func mapLockedPages(_ count: Int) -> (UnsafeMutableRawPointer, Int)? {
        let page = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
        let length = (count + page - 1) / page * page
        guard let memory = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            memory != UnsafeMutableRawPointer(bitPattern: -1)
        else { return nil }
        _ = madvise(memory, length, MADV_DONTDUMP)
        if mlock(memory, length) != 0 && !lockRefusalReported.exchange(true, ordering: .relaxed) {
            lockRefused(count)
        }
        return (memory, length)
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
        if mappedLength > 0 {
            munmap(pointer, mappedLength)  // unlocks too
        } else {
            SecurePool.release(pointer, count: count)
        }
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
