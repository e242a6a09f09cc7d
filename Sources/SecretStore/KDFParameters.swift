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
}
