import ActivityKit

struct FlightAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable {
        var gate: String?
        var boardingTime: Date
        var status: FlightStatus
        var seatMap: [String: Bool]
        var internalNote: String = ""

        enum CodingKeys: String, CodingKey {
            case gate
            case boardingTime = "boarding_time"
            case status = "flight_status", seatMap = "seat_map"
        }
    }

    enum FlightStatus: String, Codable {
        case scheduled = "SCHEDULED", boarding = "BOARDING", departed = "DEPARTED", delayed = "DELAYED"
    }

    var flightNumber: String
    var origin: String
    var destination: String
    var departure: Date

    private enum CodingKeys: String, CodingKey {
        case flightNumber = "flight_number"
        case origin = "from"
        case destination = "to"
        case departure
    }
}
