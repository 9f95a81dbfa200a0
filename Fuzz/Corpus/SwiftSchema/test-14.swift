struct Box<Value: Codable>: ActivityAttributes {
    struct ContentState: Codable, Hashable {
        var point: (x: Double, y: Double)
        var onTap: () -> Void
        var anything: Any
        var shape: any Shape
        var byPlayer: [Player: Int]
        @Clamped var volume: Int
        var mystery = makeMystery()
    }
    var value: Value
    enum Player: String, Codable { case one, two }
}
