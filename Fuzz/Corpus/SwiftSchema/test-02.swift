import ActivityKit
import CoreLocation

struct RideAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable {
        enum Phase: String, Codable {
            case searching
            case driverAssigned = "driver_assigned"
            case arriving, onTrip = "on_trip", completed
        }

        var phase: Phase
        var driver: Driver?
        var pickupETA: Date?
        var fare: Decimal?
    }

    struct Driver: Codable, Hashable {
        var name: String
        var rating: Double
        var vehicle: Vehicle
        var location: Coordinate?
    }

    struct Vehicle: Codable, Hashable { var make: String, model: String; var plate: String; var color: String? }

    struct Coordinate: Codable, Hashable {
        var latitude: Double   // degrees
        var longitude: Double  // degrees
    }

    var rideID: UUID
    var pickup: Coordinate
    var dropoff: Coordinate
    var riderName: String
}
