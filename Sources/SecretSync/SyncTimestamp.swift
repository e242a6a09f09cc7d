/// A hybrid logical clock timestamp (Kulkarni et al., 2014): the wall clock in milliseconds,
/// and a counter that orders the events within one millisecond, or after a clock that ran
/// ahead. Compared as (milliseconds, counter).
public struct SyncTimestamp: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Milliseconds since 1970, or the largest seen so far when that is later.
    public var milliseconds: UInt64
    /// Events within the same ``milliseconds``.
    public var counter: UInt32

    /// The timestamp at `milliseconds`, event `counter`.
    public init(milliseconds: UInt64, counter: UInt32 = 0) {
        self.milliseconds = milliseconds
        self.counter = counter
    }

    /// The earliest timestamp.
    public static let zero = SyncTimestamp(milliseconds: 0)

    public static func < (left: SyncTimestamp, right: SyncTimestamp) -> Bool {
        (left.milliseconds, left.counter) < (right.milliseconds, right.counter)
    }

    /// `milliseconds.counter`, as logs and `secretctl sync status` show it.
    public var description: String { "\(milliseconds).\(counter)" }
}

/// One device's hybrid logical clock: its timestamps never go backwards, follow the wall clock
/// when it is ahead, and come after every timestamp the device has seen from others, so an
/// edit made after a merge always wins over what was merged, whatever the machines' clocks say.
public struct HybridLogicalClock: Sendable {
    /// The last timestamp given or seen.
    public private(set) var last: SyncTimestamp
    /// The wall clock, in milliseconds since 1970.
    private let wallClock: @Sendable () -> UInt64

    /// A clock that has seen nothing after `last`, reading `wallClock`.
    public init(last: SyncTimestamp = .zero, wallClock: @escaping @Sendable () -> UInt64) {
        self.last = last
        self.wallClock = wallClock
    }

    /// The timestamp of a local event: later than every one before.
    public mutating func tick() -> SyncTimestamp {
        let now = wallClock()
        if now > last.milliseconds {
            last = SyncTimestamp(milliseconds: now)
        } else if last.counter == .max {
            last = SyncTimestamp(milliseconds: last.milliseconds + 1)
        } else {
            last.counter += 1
        }
        return last
    }

    /// Takes in a timestamp seen from another device, so that later local ones come after it.
    public mutating func observe(_ remote: SyncTimestamp) {
        if remote > last { last = remote }
    }
}
