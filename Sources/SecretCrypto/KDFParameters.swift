/// Argon2id cost parameters, stored beside each wrapped collection key.
public struct KDFParameters: Equatable, Sendable {
    /// Passes over memory (Argon2 `t`).
    public var iterations: Int
    /// Memory in KiB (Argon2 `m`).
    public var memoryKiB: Int
    /// Parallel lanes (Argon2 `p`).
    public var lanes: Int

    /// Creates parameters.
    public init(iterations: Int, memoryKiB: Int, lanes: Int) {
        self.iterations = iterations
        self.memoryKiB = memoryKiB
        self.lanes = lanes
    }

    /// The default for new keyrings: t=3, 64 MiB, 4 lanes (RFC 9106's second recommendation).
    public static let standard = KDFParameters(iterations: 3, memoryKiB: 64 * 1024, lanes: 4)
    /// Cheap parameters for tests only.
    public static let testing = KDFParameters(iterations: 1, memoryKiB: 64, lanes: 1)

    // MARK: - Limits

    /// The most passes any parameters may ask for.
    public static let maximumIterations = 10
    /// The most memory any parameters may ask for: 256 MiB, four times the standard.
    public static let maximumMemoryKiB = 256 * 1024
    /// The most lanes any parameters may ask for.
    public static let maximumLanes = 16

    /// Whether Argon2id can run with these parameters (at least one pass and one lane, and
    /// 8 KiB of memory per lane) and they stay within the limits, which bound one derivation
    /// to about 2 seconds and 256 MiB. Parameters read from a file (an export, the database)
    /// are checked before use, so a damaged or hostile file cannot make a derivation take
    /// gigabytes or minutes.
    public var isWithinLimits: Bool {
        (1...Self.maximumIterations).contains(iterations) && (1...Self.maximumLanes).contains(lanes)
            && memoryKiB >= 8 * lanes && memoryKiB <= Self.maximumMemoryKiB
    }

    /// Parameters read from a file; nil when they are not ``isWithinLimits``.
    public init?(checkingIterations iterations: Int, memoryKiB: Int, lanes: Int) {
        self.init(iterations: iterations, memoryKiB: memoryKiB, lanes: lanes)
        guard isWithinLimits else { return nil }
    }
}
