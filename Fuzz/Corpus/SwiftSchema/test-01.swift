import ActivityKit
import SwiftUI

/// Live score for one match.
@available(iOS 16.1, *)
public struct MatchAttributes: ActivityAttributes {
    public typealias ContentState = Score

    public struct Score: Codable, Hashable {
        public var home: Int
        public var away: Int
        public var period: Period
        public var clock: TimeInterval?
        public var lastEvent: String?
        public var isFinal: Bool = false
    }

    public enum Period: Int, Codable, Hashable {
        case first = 1, second
        case extraTime = 10
        case penalties
    }

    public let homeTeam: Team
    public let awayTeam: Team
    public let kickoff: Date
    public let league: String
}

public struct Team: Codable, Hashable {
    public let name: String
    public let shortName: String
    public let logo: URL
    public let colorHex: UInt32
}
