import Glibc
import Synchronization

/// The memory of small ``SecureBytes``: blocks of a few sizes (powers of two from 16 bytes to
/// 64 KiB) carved from pages that are locked in memory and kept out of core dumps, with a
/// list of free blocks per size, so that taking or giving back a block costs the same however
/// many are in use. libgcrypt's own secure pool, which small buffers came from before, looks
/// through its blocks one by one: with 10,000 secrets alive at once (a sync's first publish or
/// pull), 70 to 80% of secretd's time went there.
///
/// A block given back is wiped by its owner (``SecureBytes``) and reused; the pages stay with
/// the process.
enum SecurePool {
    /// The smallest block (2^4 bytes) and the number of sizes, up to 2^16.
    private static let smallestShift = 4
    private static let sizeCount = 13
    /// The pages taken at once for one size.
    private static let chunkSize = 256 * 1024

    /// Free blocks and the part of the newest chunk not handed out yet, per size (addresses).
    private struct State {
        var free = [UInt](repeating: 0, count: SecurePool.sizeCount)
        var next = [UInt](repeating: 0, count: SecurePool.sizeCount)
        var end = [UInt](repeating: 0, count: SecurePool.sizeCount)
    }

    private static let state = Mutex(State())

    /// The largest buffer the pool serves; larger ones get pages of their own.
    static let largest = 1 << (smallestShift + sizeCount - 1)

    /// The size index of a buffer of `count` bytes (at most ``largest``).
    private static func sizeIndex(_ count: Int) -> Int {
        let needed = max(count, 1 << smallestShift)
        let shift = Int.bitWidth - (needed - 1).leadingZeroBitCount
        return shift - smallestShift
    }

    /// `count` zeroed bytes (at most ``largest``); nil when no pages can be mapped.
    static func allocate(_ count: Int) -> UnsafeMutableRawPointer? {
        let index = sizeIndex(count)
        let size = 1 << (index + smallestShift)
        let address: UInt? = state.withLock { state in
            if state.free[index] != 0 {
                let block = state.free[index]
                state.free[index] = UnsafeRawPointer(bitPattern: block)!.load(as: UInt.self)
                return block
            }
            if state.next[index] == 0 || state.end[index] - state.next[index] < UInt(size) {
                guard let (chunk, length) = SecureBytes.mapLockedPages(max(chunkSize, size)) else { return nil }
                state.next[index] = UInt(bitPattern: chunk)
                state.end[index] = UInt(bitPattern: chunk) + UInt(length)
            }
            let block = state.next[index]
            state.next[index] += UInt(size)
            return block
        }
        guard let address, let block = UnsafeMutableRawPointer(bitPattern: address) else { return nil }
        memset(block, 0, size)  // a reused block holds the link to the next free one
        return block
    }

    /// Gives back the block of a buffer of `count` bytes at `block`, already wiped.
    static func release(_ block: UnsafeMutableRawPointer, count: Int) {
        let index = sizeIndex(count)
        state.withLock { state in
            block.storeBytes(of: state.free[index], as: UInt.self)
            state.free[index] = UInt(bitPattern: block)
        }
    }
}
