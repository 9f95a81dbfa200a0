import Foundation
import IsletCore
@testable import IsletServer
import Testing

/// The patterns the OpenAPI document shows and the checks the server applies come
/// from one definition each; these tests hold them to the same answers.
@Suite("Body schemas: the document's patterns and the reader's checks agree")
struct BodySchemaTests {
    static let samples: [String] = [
        "a", "order-42", "user_1", "Delivery.Attributes", "_x", "9Lives", "a/b", "a b", "a\tb", "a\u{85}b", "a\u{A0}b",
        "a\u{2003}b", "a\u{3000}b", "a\u{7F}b", "a\u{1}b", "a\u{80}b", "a\u{FEFF}b", "é", "日本", "🙂", "com.example.app",
        "com..example", ".com", "com.", "com.example-1", "com.example.app.push-type.liveactivity", "TEAMID0001",
        "teamid0001", "ABC", String(repeating: "ab", count: 32), String(repeating: "AB", count: 32), "abc",
        String(repeating: "a", count: 65), "app_0123456789abcdef0123", "app_0123456789ABCDEF0123", "!~", "a\u{0}b",
    ]

    static let formats: [(String, TextFormat)] = [
        ("plain", .text(max: 100)), ("identifier", .identifier), ("activityType", .activityType), ("bundleID", .bundleID), ("appleID", .appleID),
        ("token", .token), ("idempotencyKey", .idempotencyKey), ("appID", PathParameter.appID),
    ]

    @Test(arguments: formats.map(\.0))
    func patternAndCheckAgree(_ name: String) throws {
        let format = try #require(Self.formats.first { $0.0 == name }?.1)
        let schema = format.jsonSchema
        let pattern = try #require(schema["pattern"]?.stringValue)
        let regex = try NSRegularExpression(pattern: pattern)
        let forbidden = try schema["not"]?["pattern"]?.stringValue.map { try NSRegularExpression(pattern: $0) }
        for sample in Self.samples {
            let range = NSRange(sample.startIndex..., in: sample)
            let length = sample.unicodeScalars.count
            let byPattern = regex.firstMatch(in: sample, range: range) != nil
                && forbidden.map { $0.firstMatch(in: sample, range: range) == nil } ?? true
                && length >= (schema["minLength"]?.int64Value.map(Int.init) ?? 0)
                && length <= (schema["maxLength"]?.int64Value.map(Int.init) ?? .max)
            let byCheck = format.problem(sample) == nil
            #expect(byPattern == byCheck, "\(name): \(sample.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    @Test func lengthsCountCodePointsAsJSONSchemaDoes() {
        // "é" written as e and a combining accent: one character, two code points.
        let text = String(repeating: "e\u{301}", count: 100)
        #expect(TextFormat.text(max: 200).problem(text) == nil)
        #expect(TextFormat.text(max: 199).problem(text) != nil)
    }

    @Test func dateStringsNameTheYearsThePatternAllows() throws {
        let regex = try NSRegularExpression(pattern: FieldType.dateYearPattern)
        for year in [1969, 1970, 1971, 1999, 2026, 4999, 5000, 9999] {
            let text = "\(year)-06-01T00:00:00Z"
            let byPattern = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
            #expect(byPattern == FieldType.dateYearAllowed(text), "\(year)")
            #expect(byPattern == FieldType.dateYears.contains(year), "\(year)")
        }
    }

    @Test func requiredFieldsAndNullAreDocumentedAsRead() {
        let schema = RequestSchemas.registerDevice.jsonSchema
        #expect(schema["required"] == ["platform"])
        #expect(schema["additionalProperties"] == false)
        // An optional field takes null (as absent, or to clear it); an audience's lists do not.
        #expect(schema["properties"]?["user_id"]?["type"] == ["string", "null"])
        // An optional enumeration lists null among its values, as it takes it.
        let channel = RequestSchemas.createChannel.jsonSchema["properties"]?["message_storage_policy"]
        #expect(channel?["type"] == ["string", "null"])
        #expect(channel?["enum"] == ["none", "most_recent", .null])
        #expect(RequestSchemas.createChannel.jsonSchema["properties"]?["environment"]?["enum"] == ["sandbox", "production"])
        let audience = RequestSchemas.audience.jsonSchema
        #expect(audience["properties"]?["user_ids"]?["type"] == "array")
        #expect(audience["maxProperties"] == 1)
        #expect(RequestSchemas.updateApp(historyRetentionDays: 30).requiresBody == false)
        #expect(RequestSchemas.createApp(historyRetentionDays: 30).requiresBody == true)
    }
}
