/// A source of random numbers that can be handed to a long-lived service. Everything
/// in Islet that draws at random (retry jitter, minted ids, fault injection) takes one
/// of these, so that tests can use a seeded source and get the same draws every run.
public protocol RandomSource: RandomNumberGenerator, Sendable {}

/// The operating system's random numbers.
public struct SystemRandomSource: RandomSource {
    private var base = SystemRandomNumberGenerator()

    /// Creates the system source.
    public init() {}

    /// The next 64 random bits.
    public mutating func next() -> UInt64 { base.next() }
}

/// A repeatable source (SplitMix64): the same seed gives the same numbers, on every
/// platform. Not for secrets.
public struct SeededRandomSource: RandomSource {
    private var state: UInt64

    /// Creates a source that starts from `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 bits of the sequence.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
