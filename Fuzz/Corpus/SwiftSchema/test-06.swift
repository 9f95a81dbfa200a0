import ActivityKit
struct PizzaAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable { var slicesLeft: Int }
    var size: String
}
struct TimerAttributes: ActivityKit.ActivityAttributes {
    struct ContentState: Codable, Hashable { var endsAt: Date }
    var label: String
}
