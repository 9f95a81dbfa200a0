struct QueueAttributes {
    var venue: String
    var partySize: Int
}

extension QueueAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable {
        var position: Int
        var table: Table?
    }
}

extension QueueAttributes {
    enum CodingKeys: String, CodingKey { case venue = "venue_name", partySize = "party_size" }
}

extension QueueAttributes.ContentState {
    struct Table: Codable, Hashable { var number: Int; var area: Area }
    enum Area: Int, Codable { case inside = -1, terrace, bar = 0x10 }
}
