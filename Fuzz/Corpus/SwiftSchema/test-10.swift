struct GameAttributes: ActivityAttributes {
#if os(iOS) && !targetEnvironment(simulator)
    var platform: String
#elseif os(macOS)
    var desktop: Bool
#else
    var other: Int
#endif
    struct ContentState: Codable, Hashable { var level: Int }
}
