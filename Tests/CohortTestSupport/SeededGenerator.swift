/// A small deterministic generator (SplitMix64), so randomised tests reproduce from their seed.
///
/// The same algorithm as CohortCore's public `SplitMix64` (same seed, same numbers); this copy
/// is for the test targets that must not link CohortCore (ProceduresTests, CohortWireTests).
/// Tests that link CohortCore use `SplitMix64` itself.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
