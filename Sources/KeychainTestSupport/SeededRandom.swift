import Foundation

/// A random number generator whose seed a test prints, so a failure found with random timing
/// can be run again with the same timing: `KEYCHAIN_TEST_SEED=N swift test --filter …`.
///
/// SplitMix64 (Steele, Lea and Flood, 2014): small, fast and good enough to pick delays; not
/// for anything secret.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    /// The seed this generator started from.
    public let seed: UInt64
    private var state: UInt64

    /// A generator seeded from `KEYCHAIN_TEST_SEED` when it is set, otherwise at random; prints
    /// the seed with `label` (the test's name) so a failing run can be repeated.
    public init(printingSeedFor label: String) {
        let given = ProcessInfo.processInfo.environment["KEYCHAIN_TEST_SEED"].flatMap { UInt64($0) }
        self.init(seed: given ?? UInt64.random(in: 0...UInt64.max))
        print("\(label): random seed \(seed) (repeat with KEYCHAIN_TEST_SEED=\(seed))")
    }

    /// A generator that starts from `seed`.
    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
