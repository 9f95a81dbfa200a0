struct TreeAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable {
        var root: Node
        var custom: Custom
        enum CodingKeys: String, CodingKey { case root, custom, missing = "gone" }
    }
    var name: String
}
struct Node: Codable, Hashable { var label: String; var children: [Node] }
struct Custom: Codable, Hashable {
    var a: Int
    init(from decoder: any Decoder) throws { a = 1 }
}
