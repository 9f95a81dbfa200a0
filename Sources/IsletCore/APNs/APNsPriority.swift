/// The `apns-priority` header. APNs accepts exactly 1, 5 and 10; anything else is
/// answered 400 BadPriority.
public struct APNsPriority: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The number sent in the header.
    public let rawValue: Int

    /// Deliver now. For Live Activities, counts against the device's budget of
    /// high-priority updates.
    public static let immediate = APNsPriority(checked: 10)
    /// Deliver when the device's power state allows; does not count against the
    /// Live Activity budget.
    public static let powerConsidered = APNsPriority(checked: 5)
    /// Deliver when it suits the device's power most; may be grouped or delayed.
    public static let lowest = APNsPriority(checked: 1)

    private init(checked rawValue: Int) { self.rawValue = rawValue }

    /// The priority `rawValue`, or `nil` when APNs would refuse it.
    public init?(rawValue: Int) {
        guard rawValue == 1 || rawValue == 5 || rawValue == 10 else { return nil }
        self.rawValue = rawValue
    }

    /// The priority spelled in a header value, or `nil` when APNs would answer
    /// BadPriority: only the plain digits `1`, `5` and `10` are accepted.
    public init?(headerValue: some StringProtocol) {
        switch headerValue {
        case "1": self = .lowest
        case "5": self = .powerConsidered
        case "10": self = .immediate
        default: return nil
        }
    }

    /// The header value.
    public var description: String { String(rawValue) }

    /// Reads the priority from a JSON number, refusing values APNs refuses.
    public init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer().decode(Int.self)
        guard let priority = APNsPriority(rawValue: value) else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath, debugDescription: "apns-priority must be 1, 5 or 10, not \(value)"))
        }
        self = priority
    }

    /// Writes the priority as a JSON number.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
