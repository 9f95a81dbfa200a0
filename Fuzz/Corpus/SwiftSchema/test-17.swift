struct A: ActivityAttributes {
    struct ContentState: Codable, Hashable { var x: Int }
