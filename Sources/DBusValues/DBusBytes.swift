import Glibc

/// The bytes of a D-Bus `ay`, in memory of their own that is overwritten with zeros when the
/// last reference goes. Secrets of plain sessions and passwords travel as `ay`, so no copy the
/// daemon makes of a call's arguments or a reply outlives its use (GDBus's own buffers are
/// beyond its reach). Immutable, so it may be read on any thread; `array` makes an ordinary
/// copy, for bytes that are no secret.
package final class DBusBytes: Equatable, CustomStringConvertible, @unchecked Sendable {
    private let storage: UnsafeMutableRawBufferPointer

    /// `count` bytes, which `fill` writes.
    package init(count: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        storage = .allocate(byteCount: max(count, 1), alignment: 1)
        self.count = count
        fill(UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// A copy of `bytes`.
    package convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count) { $0.copyMemory(from: bytes) }
    }

    /// A copy of `bytes`.
    package convenience init(_ bytes: [UInt8]) {
        self.init(count: bytes.count) { target in bytes.withUnsafeBytes { target.copyMemory(from: $0) } }
    }

    deinit {
        explicit_bzero(storage.baseAddress!, storage.count)
        #if DEBUG
        Self.afterWipe?(UnsafeRawBufferPointer(storage))
        #endif
        storage.deallocate()
    }

    #if DEBUG
    /// Tests only: shown each instance's memory after the wipe, before it is freed.
    nonisolated(unsafe) package static var afterWipe: ((UnsafeRawBufferPointer) -> Void)?
    #endif

    /// How many bytes.
    package let count: Int

    /// Whether there are none.
    package var isEmpty: Bool { count == 0 }

    /// Calls `body` with the bytes, valid only for the call.
    package func withUnsafeBytes<T, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> T) throws(E) -> T {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// An ordinary (never wiped) copy, for bytes that are no secret: IVs, ciphertext, public keys.
    package var array: [UInt8] { withUnsafeBytes { Array($0) } }

    package static func == (left: DBusBytes, right: DBusBytes) -> Bool {
        left.count == right.count && left.withUnsafeBytes { a in right.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 } }
    }

    /// The length only: the bytes may be a secret.
    package var description: String { "\(count) bytes" }
}
