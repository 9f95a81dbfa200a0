import IsletCore

/// An `apns-id` or `apns-unique-id` the simulator minted, kept as the 128 random
/// bits it was drawn from; its text is written when it is needed.
struct MintedMessageID: Sendable, Hashable {
    private let high: UInt64
    private let low: UInt64

    /// Draws an id from `random`, as ``APNsMessageID/make(using:)`` would.
    init(drawingFrom random: inout some RandomNumberGenerator) {
        high = random.next()
        low = random.next()
    }

    /// The id in canonical form: exactly what ``APNsMessageID/make(using:)`` makes
    /// from the same draws.
    var text: String {
        var replay = Replay(words: (high, low))
        return APNsMessageID.make(using: &replay)
    }

    /// Hands back the two words the id was drawn from, in order.
    private struct Replay: RandomNumberGenerator {
        var words: (UInt64, UInt64)
        var used = 0

        mutating func next() -> UInt64 {
            used += 1
            return used == 1 ? words.0 : words.1
        }
    }
}
