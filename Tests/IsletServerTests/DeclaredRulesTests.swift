import Foundation
import HTTPServer
import IsletCore
import IsletCrypto
@testable import IsletServer
@testable import IsletService
import Storage
import Testing

/// What the OpenAPI document declares beyond a field's type (a private key's PEM
/// armour, a webhook URL's shape, a webhook's event patterns, the widget name that
/// goes with a format) is what the server refuses: each pattern, matched as
/// ECMA-262 matches it (the whole text), agrees with the reader's check.
@Suite("Declared rules: the document's patterns and the server's checks agree")
struct DeclaredRulesTests {
    /// Whether `pattern` takes all of `text`, as a JSON Schema validator does (ICU's
    /// `$` would also stop before a final line break).
    static func matches(_ pattern: String, _ text: String) throws -> Bool {
        let regex = try NSRegularExpression(pattern: pattern)
        let whole = NSRange(text.startIndex..., in: text)
        return regex.firstMatch(in: text, range: whole)?.range == whole
    }

    static func agree(_ format: TextFormat, _ samples: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let schema = format.jsonSchema
        let pattern = try #require(schema["pattern"]?.stringValue)
        let maxLength = try #require(schema["maxLength"]?.int64Value)
        for sample in samples {
            let byPattern = try matches(pattern, sample) && sample.unicodeScalars.count <= maxLength
            #expect(byPattern == (format.problem(sample) == nil), "\(sample.debugDescription)", sourceLocation: sourceLocation)
        }
    }

    @Test func privateKeysAreDeclaredByTheirArmour() throws {
        let key = try P256.SigningKey.generate().pemRepresentation
        let body = key.split(separator: "\n").dropFirst().dropLast().joined(separator: "\n")
        let samples = [
            key, key.replacingOccurrences(of: "\n", with: "\r\n"), "\n  " + key + "\n\n",
            "-----BEGIN EC PRIVATE KEY-----\n\(body)\n-----END EC PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\n\(body)\n-----END EC PRIVATE KEY-----", "not a key", "", body,
            "-----BEGIN PUBLIC KEY-----\n\(body)\n-----END PUBLIC KEY-----",
            "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----\(body)-----END PRIVATE KEY-----",
            "x\n" + key, key + "x", "-----BEGIN PRIVATE KEY-----\n\(body) \n-----END PRIVATE KEY-----",
        ]
        try Self.agree(.privateKeyPEM, samples)
        // What the document takes includes every key the server reads.
        #expect(TextFormat.privateKeyPEM.problem(key) == nil)
        #expect(TextFormat.privateKeyPEM.problem(key.replacingOccurrences(of: "\n", with: "\r\n")) == nil)
        #expect(TextFormat.privateKeyPEM.problem("not a key") != nil)
    }

    @Test func webhookURLsAreDeclaredByTheirShape() throws {
        let samples = [
            "https://hooks.example.com/islet", "HTTPS://Hooks.Example.com:8443/a/b?c=d&e#f", "https://8.8.8.8/x",
            "https://[2001:db8::1]:443/x", "https://a", "https://a/%41%2f", "https://a/~user/!$&'()*+,;=:@x",
            "http://hooks.example.com/x", "ftp://hooks.example.com/x", "https://user:secret@hooks.example.com/x",
            "https://user@hooks.example.com", "https://", "https:///x", "hooks.example.com/x", "0", "https://a b/",
            "https://a/ b", "https://a/%zz", "https://a:123456", "https://a:", "https://a\n", "https://a/é",
            "https://a#b#c", "https://[]/", "https://a?x=%20#y?z/",
        ]
        try Self.agree(.webhookURL(allowHTTP: false), samples)
        try Self.agree(.webhookURL(allowHTTP: true), samples)
        #expect(TextFormat.webhookURL(allowHTTP: false).problem("http://hooks.example.com/x") != nil)
        #expect(TextFormat.webhookURL(allowHTTP: true).problem("http://hooks.example.com/x") == nil)
        #expect(TextFormat.webhookURL(allowHTTP: true).problem("ftp://hooks.example.com/x") != nil)
        // What the pattern takes, the service's own reading takes too.
        for sample in samples where TextFormat.webhookURL(allowHTTP: false).problem(sample) == nil {
            let components = try #require(URLComponents(string: sample), "\(sample)")
            #expect(components.host?.isEmpty == false && components.user == nil && components.password == nil, "\(sample)")
        }
    }

    @Test func eventPatternsAreDeclaredOneByOne() throws {
        var samples = ["*", "activity.*", "push.*", "push.failed", "push.nope", "nope.*", "", "**", "push.failed ", "activity."]
        samples += EventType.allCases.map(\.rawValue)
        try Self.agree(.eventPattern, samples)
        for sample in samples {
            #expect((TextFormat.eventPattern.problem(sample) == nil) == (EventPattern(sample) != nil), "\(sample)")
        }
    }

    @Test func anIntEnumTakesWholeFractionsAsJSONSchemaDoes() {
        // JSON Schema's integers include 5.0; the server keeps them as integers.
        let parsed = FieldSchema.parseFields(["size": ["type": "int", "enum": [.double(1), 2, .double(-3)]]], path: "attributes")
        #expect(parsed.problems.isEmpty)
        #expect(parsed.fields["size"]?.allowed == [.integer(1), .integer(2), .integer(-3)])
        for refused: JSONValue in [[.double(1.5)], [.double(1e300)], ["1"], [], [true]] {
            let field: JSONValue = ["type": "int", "enum": refused]
            #expect(FieldSchema.parseFields(["size": field], path: "attributes").problems.map(\.path) == ["attributes.size.enum"], "\(refused)")
        }
    }

    @Test func cursorsFollowTheirDocumentedPatterns() throws {
        let schedule = try #require(ScheduleRoutes.listQuery.first { $0.name == "cursor" }?.schema["pattern"]?.stringValue)
        for sample in ["1767225600000-42", "0-0", "123456789012345678-1", "1234567890123456789-1", "1-", "-1", "+1-2", "1-2-3", "a-1", "1347161498758040369491605-4", "１-2"] {
            #expect(try Self.matches(schedule, sample) == (ScheduleRoutes.cursor(sample) != nil), "\(sample)")
        }
        let webhook = try #require(WebhookRoutes.listQuery.first { $0.name == "cursor" }?.schema["pattern"]?.stringValue)
        for sample in ["1767225600000-wh_0123456789abcdef0123", "0-wh_a", "1234567890123456-wh_a", "1-wh_", "1-wh_ABC", "1-whx_a", "-wh_a", "1-wh_a-b", "+1-wh_a"] {
            #expect(try Self.matches(webhook, sample) == (WebhookRoutes.cursor(sample) != nil), "\(sample)")
        }
        let cursor = WebhookCursor(createdAt: Date(unixMilliseconds: 1_767_225_600_123), webhookID: "wh_0123456789abcdef0123")
        #expect(WebhookRoutes.cursor(WebhookRoutes.cursorText(cursor)) == cursor)
    }

    @Test func everyRouteDocumentsTheRequestsRefusedBeforeRouting() {
        let document = OpenAPIDocument.make(routes: [
            APIRoute("GET", "/healthz", summary: "Health.", access: .open, responses: [(200, "OK")]) { _ in HTTPResponse(status: 200) },
        ])
        #expect(document["paths"]?["/healthz"]?["get"]?["responses"]?["400"] != nil)
    }

    @Test func theWidgetNameIsDeclaredWithItsFormat() throws {
        let schema = RequestSchemas.activityType.jsonSchema
        let alternatives = try #require(schema["anyOf"]?.arrayValue)
        /// Whether a body's format and widget name fit one of the alternatives, read
        /// as JSON Schema reads them (a property's schema binds only when present).
        func declared(_ body: [String: JSONValue]) -> Bool {
            alternatives.contains { alternative in
                let required = alternative["required"]?.arrayValue?.compactMap(\.stringValue) ?? []
                guard required.allSatisfy({ body[$0] != nil }) else { return false }
                for (name, rule) in alternative["properties"]?.objectValue ?? [:] {
                    guard let value = body[name] else { continue }
                    if let constant = rule["const"], constant != value { return false }
                    if let allowed = rule["enum"]?.arrayValue, !allowed.contains(value) { return false }
                    if rule["type"] == "string", value.stringValue == nil { return false }
                    if rule["type"] == "null", value != .null { return false }
                }
                return true
            }
        }
        let bodies: [[String: JSONValue]] = [
            [:], ["format": "activitykit"], ["format": .null], ["format": "expo-widgets", "widget_name": "Delivery"],
            ["format": "expo-widgets"], ["format": "expo-widgets", "widget_name": .null], ["widget_name": "Delivery"],
            ["format": "activitykit", "widget_name": "Delivery"], ["widget_name": .null],
        ]
        for body in bodies {
            let format = body["format"]?.stringValue.flatMap(ActivityTypeSchema.Format.init(rawValue:)) ?? .activitykit
            let schema = ActivityTypeSchema(format: format, widgetName: body["widget_name"]?.stringValue, attributes: [:], contentState: [:])
            let accepted = (try? ActivityTypeService.checkWidget(schema)) != nil
            #expect(declared(body) == accepted, "\(body)")
        }
    }
}
