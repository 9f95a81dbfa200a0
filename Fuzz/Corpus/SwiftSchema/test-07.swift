enum Widgets {
    struct Attributes {
        struct ContentState: Codable, Hashable { var count: Int8 }
        var title: String
    }
}
