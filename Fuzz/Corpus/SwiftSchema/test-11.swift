struct DeliveryAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable {
        var courier: Courier?
        var stops: [Stop]
    }
    var store: StoreInfo
}
struct Courier: Codable, Hashable { var name: String; var vehicle: Vehicle }
