import Foundation
import IsletCore
import Testing

@Suite("Schema checks, as the device's JSONDecoder decodes")
struct SchemaCheckTests {
    let fields: [String: FieldSchema] = [
        "status": FieldSchema(.string, allowed: ["preparing", "on_the_way"]),
        "eta": FieldSchema(.date),
        "stops": FieldSchema(.int),
        "progress": FieldSchema(.double),
        "note": FieldSchema(.string, required: false, nullable: true),
        "courier": FieldSchema(.object, required: false, nullable: true, fields: ["name": FieldSchema(.string)]),
        "items": FieldSchema(.array, items: FieldSchema(.object, fields: ["sku": FieldSchema(.string), "qty": FieldSchema(.int)])),
        "link": FieldSchema(.url, required: false, nullable: true),
    ]

    func check(_ state: JSONValue, mode: SchemaCheck.Mode = .prepare) -> SchemaCheck.Result {
        SchemaCheck.check(state, fields: fields, path: "content_state", mode: mode)
    }

    let valid: JSONValue = [
        "status": "preparing", "eta": 1_900_000_000, "stops": 3, "progress": 0.5, "items": [["sku": "A1", "qty": 2]],
    ]

    func with(_ changes: [String: JSONValue?]) -> JSONValue {
        var members = valid.objectValue!
        for (key, value) in changes { members[key] = value }
        return .object(members)
    }

    @Test func aValidStateHasNoViolations() {
        let result = check(valid)
        #expect(result.violations.isEmpty)
        #expect(result.warnings.isEmpty)
    }

    @Test func eachRuleNamesItsPath() {
        let cases: [(JSONValue, String)] = [
            (with(["stops": 2.5]), "content_state.stops"),
            (with(["stops": "3"]), "content_state.stops"),
            (with(["eta": nil]), "content_state.eta"),
            (with(["eta": .null]), "content_state.eta"),
            (with(["status": "delivered"]), "content_state.status"),
            (with(["progress": true]), "content_state.progress"),
            (with(["courier": ["name": 7]]), "content_state.courier.name"),
            (with(["items": [["sku": "A1", "qty": 2], ["sku": "B2"]]]), "content_state.items[1].qty"),
            (with(["link": ""]), "content_state.link"),
            (with(["eta": 1_900_000_000_000]), "content_state.eta"),
            (with(["eta": "next tuesday"]), "content_state.eta"),
        ]
        for (state, path) in cases {
            #expect(check(state).violations.map(\.path) == [path], "\(state.jsonText)")
        }
        #expect(check(with(["eta": .null])).violations.first?.message.contains("not optional") == true)
        #expect(check(with(["stops": 2.5])).violations.first?.message.contains("fraction") == true)
    }

    @Test func optionalsMayBeMissingOrNullAndUnknownKeysAreWarnings() {
        let result = check(with(["note": .null, "courier": nil, "extra": 1]))
        #expect(result.violations.isEmpty)
        #expect(result.warnings.map(\.path) == ["content_state.extra"])
    }

    @Test func wholeDoublesAreIntsAsFoundationDecodesThem() {
        let result = check(with(["stops": 3.0]))
        #expect(result.violations.isEmpty)
        #expect(result.value["stops"] == 3)
    }

    struct State: Decodable, Equatable {
        let eta: Date
    }

    @Test func datesAreConvertedToEachEncodingAndDecodeWithFoundation() throws {
        let moment = Date(timeIntervalSince1970: 1_900_000_000)
        let inputs: [JSONValue] = ["2030-03-17T17:46:40Z", 1_900_000_000, "2030-03-17T17:46:40.000Z"]
        for encoding in DateEncoding.allCases {
            let schema = ["eta": FieldSchema(.date, dateEncoding: encoding)]
            for input in inputs {
                let result = SchemaCheck.check(["eta": input], fields: schema, path: "content_state", mode: .prepare)
                #expect(result.violations.isEmpty)
                let decoder = JSONDecoder()
                switch encoding {
                case .secondsSince2001: break  // JSONDecoder's default
                case .unix: decoder.dateDecodingStrategy = .secondsSince1970
                case .iso8601: decoder.dateDecodingStrategy = .iso8601
                }
                let decoded = try decoder.decode(State.self, from: Data(result.value.jsonText.utf8))
                #expect(decoded.eta == moment, "\(encoding) from \(input.jsonText)")
                // What was prepared passes the device's own check.
                #expect(SchemaCheck.check(result.value, fields: schema, path: "content_state", mode: .decode).violations.isEmpty)
            }
        }
        // A Unix number where the device expects seconds since 2001 is a
        // different moment; a string where it expects a number fails to decode.
        let swiftDefault = ["eta": FieldSchema(.date)]
        #expect(SchemaCheck.check(["eta": "2030-03-17T17:46:40Z"], fields: swiftDefault, path: "s", mode: .decode).violations.count == 1)
        let prepared = SchemaCheck.check(["eta": 1_900_000_000], fields: swiftDefault, path: "s", mode: .prepare)
        #expect(prepared.value["eta"] == .integer(1_900_000_000 - 978_307_200))
    }

    @Test func expoWrapperRoundTrips() throws {
        let wrapped = SchemaCheck.expoWrap(["stage": "received"], widgetName: "ReceiptTracking")
        #expect(wrapped["name"] == "ReceiptTracking")
        let props = try #require(wrapped["props"]?.stringValue)
        #expect(try JSONValue(parsing: Data(props.utf8)) == ["stage": "received"])
        #expect(SchemaCheck.expoUnwrap(wrapped, path: "content_state").state == ["stage": "received"])
        #expect(SchemaCheck.expoUnwrap(["stage": "received"], path: "content_state").violation?.path == "content_state.name")
    }

    @Test func schemaChangesThatBreakRunningActivitiesAreNamed() {
        let old = ActivityTypeSchema(attributes: [:], contentState: ["eta": FieldSchema(.date), "note": FieldSchema(.string, required: false, nullable: true)])
        var added = old
        added.contentState["driver"] = FieldSchema(.string)
        #expect(added.breakingChanges(from: old) == ["content_state.driver: a new required field"])
        var optional = old
        optional.contentState["driver"] = FieldSchema(.string, required: false, nullable: true)
        #expect(optional.breakingChanges(from: old).isEmpty)
        var retyped = old
        retyped.contentState["eta"] = FieldSchema(.int)
        #expect(retyped.breakingChanges(from: old) == ["content_state.eta: type date becomes int"])
        var tightened = old
        tightened.contentState["note"] = FieldSchema(.string, required: false, nullable: false)
        #expect(tightened.breakingChanges(from: old) == ["content_state.note: no longer takes null"])
        // The other direction: devices on the old app must still decode what is sent.
        var removed = old
        removed.contentState["eta"] = nil
        #expect(removed.breakingChanges(from: old) == ["content_state.eta: removed, but devices on the old app require it"])
        var loosened = old
        loosened.contentState["eta"] = FieldSchema(.date, required: false, nullable: true)
        #expect(loosened.breakingChanges(from: old).count == 2)
        let enumOld = ActivityTypeSchema(attributes: [:], contentState: ["stage": FieldSchema(.string, allowed: ["a", "b"])])
        var enumAdded = enumOld
        enumAdded.contentState["stage"] = FieldSchema(.string, allowed: ["a", "b", "c"])
        #expect(enumAdded.breakingChanges(from: enumOld) == [#"content_state.stage: enum values added ("c"), which devices on the old app refuse"#])
        var optionalRemoved = old
        optionalRemoved.contentState["note"] = nil
        #expect(optionalRemoved.breakingChanges(from: old).isEmpty)
    }

    @Test func fieldDefinitionsAreParsedStrictly() {
        let parsed = FieldSchema.parseFields([
            "eta": ["type": "date", "date_encoding": "unix"],
            "bad": ["type": "datetime"],
            "odd": ["type": "string", "date_encoding": "unix", "colour": "red"],
            "tags": ["type": "array", "items": ["type": "string", "nullable": true]],
        ], path: "content_state")
        #expect(parsed.fields["eta"] == FieldSchema(.date, dateEncoding: .unix))
        #expect(parsed.fields["tags"]?.items == FieldSchema(.string, nullable: true))
        #expect(Set(parsed.problems.map(\.path)) == ["content_state.bad.type", "content_state.odd.colour", "content_state.odd.date_encoding"])
    }
}
