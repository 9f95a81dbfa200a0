import ActivityKit
import Foundation

struct DeliveryAttributes: ActivityAttributes {
    public struct ContentState: Codable, Hashable {
        var status: Status
        var eta: Date
        var courier: Courier?
        var progress: Double
        var stops: [String]
    }
    var orderNumber: Int
    var restaurant: String
    let menuURL: URL?
    static let preview = DeliveryAttributes(orderNumber: 1, restaurant: "x", menuURL: nil)   // static: ignored
    var computed: String { "x" }   // computed: ignored
}
enum Status: String, Codable { case preparing, onTheWay = "on_the_way", delivered }
struct Courier: Codable, Hashable { var name: String; var rating: Int? }
