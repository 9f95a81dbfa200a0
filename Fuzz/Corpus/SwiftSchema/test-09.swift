import ActivityKit
typealias Minutes = Int
typealias BidderID = String
struct Range<Bound: Codable & Hashable>: Codable, Hashable { var lower: Bound; var upper: Bound? }
struct AuctionAttributes: ActivityAttributes {
    typealias Money = Foundation.Decimal
    struct ContentState: Codable, Hashable {
        var bid: Money
        var window: Range<Minutes>
        var bidders: Optional<[String]>
        var flags: Dictionary<String, Bool>
        var bidsByBidder: [BidderID: Decimal]
        var heldFor: Swift.Optional<Minutes>
    }
    var lot: AuctionAttributes.Lot
    struct Lot: Codable, Hashable { var title: String; var photos: [URL]? }
}
