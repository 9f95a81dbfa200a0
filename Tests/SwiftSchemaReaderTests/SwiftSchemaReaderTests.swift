import IsletCore
import SwiftSchemaReader
import Testing

/// A schema field: `required` and `nullable` follow `optional`.
private func field(
    _ type: String, optional: Bool = false, values: [JSONValue]? = nil, fields: [String: JSONValue]? = nil,
    items: JSONValue? = nil
) -> JSONValue {
    var members: [String: JSONValue] = ["type": .string(type), "required": .bool(!optional), "nullable": .bool(optional)]
    if let values { members["enum"] = .array(values) }
    if let fields { members["fields"] = .object(fields) }
    if let items { members["items"] = items }
    return .object(members)
}

/// An array's `items`: always required, nullable when the element is optional.
private func element(
    _ type: String, nullable: Bool = false, values: [JSONValue]? = nil, fields: [String: JSONValue]? = nil,
    items: JSONValue? = nil
) -> JSONValue {
    var members = field(type, values: values, fields: fields, items: items).objectValue!
    members["nullable"] = .bool(nullable)
    return .object(members)
}

private func schema(attributes: [String: JSONValue], contentState: [String: JSONValue]) -> JSONValue {
    ["format": "activitykit", "attributes": .object(attributes), "content_state": .object(contentState)]
}

/// The error `source` is refused with, or nil when it is read.
private func failure(_ source: String, typeName: String? = nil) -> SwiftSchemaError? {
    do {
        _ = try SwiftSchemaReader.schema(fromSwift: source, typeName: typeName)
        return nil
    } catch {
        return error
    }
}

@Suite("Swift schema reader: attribute files")
struct SwiftSchemaReaderFileTests {
    @Test func deliveryWithEnumsAndNestedStructs() throws {
        let source = """
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
            """
        let expected = schema(
            attributes: [
                "orderNumber": field("int"),
                "restaurant": field("string"),
                "menuURL": field("url", optional: true),
            ],
            contentState: [
                "status": field("string", values: ["preparing", "on_the_way", "delivered"]),
                "eta": field("date"),
                "courier": field("object", optional: true, fields: [
                    "name": field("string"),
                    "rating": field("int", optional: true),
                ]),
                "progress": field("double"),
                "stops": field("array", items: element("string")),
            ])
        #expect(try SwiftSchemaReader.schema(fromSwift: source) == expected)
    }

    @Test func sportsScoreWithIntEnumAndTypeAliasContentState() throws {
        let source = """
            import ActivityKit
            import SwiftUI

            /// Live score for one match.
            @available(iOS 16.1, *)
            public struct MatchAttributes: ActivityAttributes {
                public typealias ContentState = Score

                public struct Score: Codable, Hashable {
                    public var home: Int
                    public var away: Int
                    public var period: Period
                    public var clock: TimeInterval?
                    public var lastEvent: String?
                    public var isFinal: Bool = false
                }

                public enum Period: Int, Codable, Hashable {
                    case first = 1, second
                    case extraTime = 10
                    case penalties
                }

                public let homeTeam: Team
                public let awayTeam: Team
                public let kickoff: Date
                public let league: String
            }

            public struct Team: Codable, Hashable {
                public let name: String
                public let shortName: String
                public let logo: URL
                public let colorHex: UInt32
            }
            """
        let team = field("object", fields: [
            "name": field("string"), "shortName": field("string"), "logo": field("url"), "colorHex": field("int"),
        ])
        let expected = schema(
            attributes: ["homeTeam": team, "awayTeam": team, "kickoff": field("date"), "league": field("string")],
            contentState: [
                "home": field("int"),
                "away": field("int"),
                "period": field("int", values: [1, 2, 10, 11]),
                "clock": field("double", optional: true),
                "lastEvent": field("string", optional: true),
                "isFinal": field("bool"),
            ])
        #expect(try SwiftSchemaReader.schema(fromSwift: source) == expected)
    }

    @Test func rideShareWithOptionalDriverAndCoordinates() throws {
        let source = """
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
            """
        let coordinate = ["latitude": field("double"), "longitude": field("double")]
        let expected = schema(
            attributes: [
                "rideID": field("string"),
                "pickup": field("object", fields: coordinate),
                "dropoff": field("object", fields: coordinate),
                "riderName": field("string"),
            ],
            contentState: [
                "phase": field("string", values: ["searching", "driver_assigned", "arriving", "on_trip", "completed"]),
                "driver": field("object", optional: true, fields: [
                    "name": field("string"),
                    "rating": field("double"),
                    "vehicle": field("object", fields: [
                        "make": field("string"), "model": field("string"), "plate": field("string"),
                        "color": field("string", optional: true),
                    ]),
                    "location": field("object", optional: true, fields: coordinate),
                ]),
                "pickupETA": field("date", optional: true),
                "fare": field("double", optional: true),
            ])
        #expect(try SwiftSchemaReader.schema(fromSwift: source) == expected)
    }

    @Test func ciBuildWithArraysOfSteps() throws {
        let source = """
            import ActivityKit

            enum StepState: String, Codable, Hashable, CaseIterable {
                case queued
                case running
                case passed
                case failed
                case skipped
            }

            struct BuildStep: Codable, Hashable, Identifiable {
                var id: String { name }
                var name: String
                var state: StepState
                var durationSeconds: Int?
                var logLines: [String?]
            }

            struct CIBuildAttributes: ActivityAttributes {
                struct ContentState: Codable, Hashable {
                    var steps: [BuildStep]
                    var currentStep: Int?
                    var startedAt: Date
                    var finishedAt: Date?
                    var artifacts: [String: URL]
                    var tags: Set<String>
                    var matrix: [[Swift.String]]
                }
                var repository: String
                var branch: String
                var commit: Substring
                var pipeline: Array<String>
                var buildNumber: UInt64
            }
            """
        let step = element("object", fields: [
            "name": field("string"),
            "state": field("string", values: ["queued", "running", "passed", "failed", "skipped"]),
            "durationSeconds": field("int", optional: true),
            "logLines": field("array", items: element("string", nullable: true)),
        ])
        let expected = schema(
            attributes: [
                "repository": field("string"),
                "branch": field("string"),
                "commit": field("string"),
                "pipeline": field("array", items: element("string")),
                "buildNumber": field("int"),
            ],
            contentState: [
                "steps": field("array", items: step),
                "currentStep": field("int", optional: true),
                "startedAt": field("date"),
                "finishedAt": field("date", optional: true),
                "artifacts": field("object"),
                "tags": field("array", items: element("string")),
                "matrix": field("array", items: element("array", items: element("string"))),
            ])
        #expect(try SwiftSchemaReader.schema(fromSwift: source) == expected)
    }

    @Test func codingKeysChooseAndRenameKeys() throws {
        let source = """
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
            """
        let expected = schema(
            attributes: [
                "flight_number": field("string"), "from": field("string"), "to": field("string"),
                "departure": field("date"),
            ],
            contentState: [
                "gate": field("string", optional: true),
                "boarding_time": field("date"),
                "flight_status": field("string", values: ["SCHEDULED", "BOARDING", "DEPARTED", "DELAYED"]),
                "seat_map": field("object"),
            ])
        #expect(try SwiftSchemaReader.schema(fromSwift: source) == expected)
    }

    @Test func skipsLetDefaultsStaticsComputedAndReadsThroughCommentsAndAttributes() throws {
        let source = #"""
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
                        """
                    private(set) var extended: Bool = false
                }
            }
            """#
        let expected = schema(
            attributes: [
                "zone": field("string"),
                "plate": field("string"),
                "legacyRate": field("double", optional: true),
                "rate": field("double"),
                "currency": field("string"),
                "floor": field("int"),
                "spot": field("int"),
                "observed": field("int"),
                "watched": field("bool"),
                "default": field("bool"),
                "inferredCount": field("int"),
                "inferredRatio": field("double"),
            ],
            contentState: [
                "endsAt": field("date"),
                "paidMinutes": field("int"),
                "message": field("string", optional: true),
                "extended": field("bool"),
            ])
        #expect(try SwiftSchemaReader.schema(fromSwift: source) == expected)
    }
}

@Suite("Swift schema reader: roots and resolution")
struct SwiftSchemaReaderResolutionTests {
    static let twoRoots = """
        import ActivityKit
        struct PizzaAttributes: ActivityAttributes {
            struct ContentState: Codable, Hashable { var slicesLeft: Int }
            var size: String
        }
        struct TimerAttributes: ActivityKit.ActivityAttributes {
            struct ContentState: Codable, Hashable { var endsAt: Date }
            var label: String
        }
        """

    @Test func typeNameChoosesAmongCandidates() throws {
        let pizza = try SwiftSchemaReader.schema(fromSwift: Self.twoRoots, typeName: "PizzaAttributes")
        #expect(pizza == schema(attributes: ["size": field("string")], contentState: ["slicesLeft": field("int")]))
        let timer = try SwiftSchemaReader.schema(fromSwift: Self.twoRoots, typeName: "TimerAttributes")
        #expect(timer == schema(attributes: ["label": field("string")], contentState: ["endsAt": field("date")]))
    }

    @Test func typeNameMayNameANestedTypeOrOneWithoutTheConformance() throws {
        let source = """
            enum Widgets {
                struct Attributes {
                    struct ContentState: Codable, Hashable { var count: Int8 }
                    var title: String
                }
            }
            """
        let expected = schema(attributes: ["title": field("string")], contentState: ["count": field("int")])
        #expect(try SwiftSchemaReader.schema(fromSwift: source, typeName: "Widgets.Attributes") == expected)
        #expect(try SwiftSchemaReader.schema(fromSwift: source, typeName: "Attributes") == expected)
        #expect(failure(source)?.code == .noActivityAttributes)
        #expect(failure(source, typeName: "Gadgets")?.code == .typeNotFound)
    }

    @Test func extensionsAddConformanceContentStateAndCodingKeys() throws {
        let source = """
            struct QueueAttributes {
                var venue: String
                var partySize: Int
            }

            extension QueueAttributes: ActivityAttributes {
                struct ContentState: Codable, Hashable {
                    var position: Int
                    var table: Table?
                }
            }

            extension QueueAttributes {
                enum CodingKeys: String, CodingKey { case venue = "venue_name", partySize = "party_size" }
            }

            extension QueueAttributes.ContentState {
                struct Table: Codable, Hashable { var number: Int; var area: Area }
                enum Area: Int, Codable { case inside = -1, terrace, bar = 0x10 }
            }
            """
        let expected = schema(
            attributes: ["venue_name": field("string"), "party_size": field("int")],
            contentState: [
                "position": field("int"),
                "table": field("object", optional: true, fields: [
                    "number": field("int"), "area": field("int", values: [-1, 0, 16]),
                ]),
            ])
        #expect(try SwiftSchemaReader.schema(fromSwift: source) == expected)
    }

    @Test func genericStructsAliasesAndQualifiedNames() throws {
        let source = """
            import ActivityKit
            typealias Minutes = Int
            typealias BidderID = String
            struct Range<Bound: Codable & Hashable>: Codable, Hashable { var lower: Bound; var upper: Bound? }
            struct AuctionAttributes: ActivityAttributes {
                typealias Money = Foundation.Decimal
                struct ContentState: Codable, Hashable {
                    var bid: Money
                    var window: Range<Minutes>
                    var bidders: Optional<[String]>
                    var flags: Dictionary<String, Bool>
                    var bidsByBidder: [BidderID: Decimal]
                    var heldFor: Swift.Optional<Minutes>
                }
                var lot: AuctionAttributes.Lot
                struct Lot: Codable, Hashable { var title: String; var photos: [URL]? }
            }
            """
        let expected = schema(
            attributes: [
                "lot": field("object", fields: [
                    "title": field("string"), "photos": field("array", optional: true, items: element("url")),
                ]),
            ],
            contentState: [
                "bid": field("double"),
                "window": field("object", fields: ["lower": field("int"), "upper": field("int", optional: true)]),
                "bidders": field("array", optional: true, items: element("string")),
                "flags": field("object"),
                "bidsByBidder": field("object"),
                "heldFor": field("int", optional: true),
            ])
        #expect(try SwiftSchemaReader.schema(fromSwift: source) == expected)
    }

    @Test func conditionalCompilationReadsBothBranches() throws {
        let source = """
            struct GameAttributes: ActivityAttributes {
            #if os(iOS) && !targetEnvironment(simulator)
                var platform: String
            #elseif os(macOS)
                var desktop: Bool
            #else
                var other: Int
            #endif
                struct ContentState: Codable, Hashable { var level: Int }
            }
            """
        let expected = schema(
            attributes: ["platform": field("string"), "desktop": field("bool"), "other": field("int")],
            contentState: ["level": field("int")])
        #expect(try SwiftSchemaReader.schema(fromSwift: source) == expected)
    }
}

@Suite("Swift schema reader: errors")
struct SwiftSchemaReaderErrorTests {
    @Test func typeFromAnotherFileIsNamedWithItsPath() {
        let source = """
            struct DeliveryAttributes: ActivityAttributes {
                struct ContentState: Codable, Hashable {
                    var courier: Courier?
                    var stops: [Stop]
                }
                var store: StoreInfo
            }
            struct Courier: Codable, Hashable { var name: String; var vehicle: Vehicle }
            """
        let error = failure(source)
        #expect(error?.code == .typeNotFound)
        #expect(error?.problems == [
            "attributes.store: type StoreInfo is not defined in this file",
            "content_state.courier.vehicle: type Vehicle is not defined in this file",
            "content_state.stops[]: type Stop is not defined in this file",
        ])
        #expect(error?.description.hasPrefix("typeNotFound: attributes.store: type StoreInfo") == true)
    }

    @Test func enumWithoutRawValuesIsUnsupported() {
        let source = """
            struct RideAttributes: ActivityAttributes {
                struct ContentState: Codable, Hashable { var phase: Phase }
                enum Phase: Codable, Hashable { case waiting, riding(minutes: Int) }
                var riderName: String
            }
            """
        let error = failure(source)
        #expect(error?.code == .unsupported)
        #expect(error?.problems.count == 1)
        #expect(error?.problems.first?.hasPrefix("content_state.phase: enum Phase has no String or Int raw values") == true)
    }

    @Test func noActivityAttributesType() {
        let source = """
            import Foundation
            struct Order: Codable { var id: Int }
            """
        #expect(failure(source)?.code == .noActivityAttributes)
        #expect(failure("")?.code == .noActivityAttributes)
    }

    @Test func twoCandidatesWithoutATypeName() {
        let error = failure(SwiftSchemaReaderResolutionTests.twoRoots)
        #expect(error?.code == .ambiguousRoot)
        #expect(error?.problems.first?.contains("PizzaAttributes, TimerAttributes") == true)
    }

    @Test func genericParametersTuplesClosuresAndWrappersAreNamed() {
        let source = """
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
            """
        let error = failure(source)
        #expect(error?.code == .unsupported)
        let paths = error?.problems.map { String($0.prefix(while: { $0 != ":" })) }
        #expect(paths == [
            "attributes.value", "content_state.point", "content_state.onTap", "content_state.anything",
            "content_state.shape", "content_state.byPlayer", "content_state.volume", "content_state.mystery",
        ])
        #expect(error?.problems.first == "attributes.value: Value is a generic parameter; the schema needs a concrete type")
    }

    @Test func recursiveTypesCustomDecodingAndStrayCodingKeysAreNamed() {
        let source = """
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
            """
        let error = failure(source)
        #expect(error?.code == .unsupported)
        #expect(error?.problems.count == 3)
        #expect(error?.problems[0].hasPrefix("content_state.gone: CodingKeys case missing names no stored property") == true)
        #expect(error?.problems[1].hasPrefix("content_state.root.children[]: Node contains itself") == true)
        #expect(error?.problems[2].hasPrefix("content_state.custom: Custom decodes itself") == true)
    }

    @Test func missingContentStateIsNamed() {
        let error = failure("struct A: ActivityAttributes { var x: Int }")
        #expect(error?.code == .typeNotFound)
        #expect(error?.problems == ["content_state: A has no ContentState type in this file"])
    }

    @Test func syntaxErrorsNameTheLine() {
        let unterminated = """
            struct A: ActivityAttributes {
                struct ContentState: Codable, Hashable { var x: Int }
                static let y = "never closed
            }
            """
        #expect(failure(unterminated) == SwiftSchemaError(.syntax, problems: ["line 3: unterminated string literal"]))
        let unclosed = """
            struct A: ActivityAttributes {
                struct ContentState: Codable, Hashable { var x: Int }
            """
        #expect(failure(unclosed) == SwiftSchemaError(.syntax, problems: ["line 1: '{' is never closed"]))
        let stray = "struct A {}\n}\n"
        #expect(failure(stray) == SwiftSchemaError(.syntax, problems: ["line 2: unexpected '}'"]))
        let noType = "struct A: ActivityAttributes { var x: = 3 }"
        #expect(failure(noType)?.code == .syntax)
        #expect(failure("/* open comment")?.code == .syntax)
    }
}
