// Copyright 2025 Example Corp. { not code
import ActivityKit
import Foundation

/* A block comment with a { brace and /* a nested comment } */ still inside } */

/// Parking session.
@available(iOS 16.1, *)
@available(macOS, unavailable)
public struct ParkingAttributes: ActivityAttributes, Sendable {
    public static let preview = ParkingAttributes(zone: "A1", plate: "ABC-123", rate: 2.5)
    public static var counter = 0
    let schemaVersion: Int = 2   // a let with a default is not decoded
    let createdBy = "app"
    public let zone: String
    public private(set) var plate: String
    @available(*, deprecated, message: "use rate { }") var legacyRate: Double?
    var rate: Double; var currency: String = "EUR"
    var floor, spot: Int
    lazy var cache: [String] = []
    var label: String { "\(zone)-\(plate) {" }
    var note: String { get { "}" } }
    var displayName: String {
        "Zone \(zone.uppercased()) } \("nested \")")"
    }
    var observed: Int = 0 {
        didSet { print("changed { \(oldValue)") }
    }
    var watched: Bool {
        willSet { }
    }
    var `default`: Bool
    var inferredCount = 3, inferredRatio = -0.5
    func summary() -> String { "}" }
    init(zone: String, plate: String, rate: Double) {
        self.zone = zone; self.plate = plate; self.rate = rate
        floor = 0; spot = 0; watched = false; `default` = true
    }

    public struct ContentState: Codable, Hashable {
        var endsAt: Date
        var paidMinutes: Int
        static let template = #"{"a": "}"}"#
        var message: String? = """
            Multi-line { with "quotes" }
