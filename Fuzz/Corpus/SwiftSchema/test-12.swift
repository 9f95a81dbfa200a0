struct RideAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable { var phase: Phase }
    enum Phase: Codable, Hashable { case waiting, riding(minutes: Int) }
    var riderName: String
}
