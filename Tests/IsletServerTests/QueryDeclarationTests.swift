import Foundation
import HTTPServer
import IsletCore
import IsletLog
@testable import IsletServer
import IsletSync
import IsletTesting
import Testing

/// A route's declared query parameters and body schema drive the parsing: the
/// router checks them before the handler runs, and the OpenAPI document shows the
/// same declarations, so that the two cannot disagree.
@Suite("Query and body declarations drive parsing")
struct QueryDeclarationTests {
    /// A dispatcher over `routes`, with no middleware.
    static func dispatcher(_ routes: [APIRoute]) -> Dispatcher {
        let logger = Logger(level: .error, format: .logfmt, sink: MemoryLogSink())
        let router = Dispatcher.router(routes: routes, middleware: [], logger: logger)
        return Dispatcher(router: router, logger: logger, metrics: nil, random: SeededRandomSource(seed: 3))
    }

    static func call(_ dispatcher: Dispatcher, _ method: String, _ path: String, query: [(String, String)] = [], body: String = "") async -> (
        status: Int, json: JSONValue
    ) {
        let response = await dispatcher.handle(HTTPRequest(
            method: method, path: path, query: query.map { (name: $0.0, value: $0.1) }, body: Data(body.utf8)))
        return (response.status, (try? JSONValue(parsing: response.body)) ?? .null)
    }

    static func faults(_ json: JSONValue) -> [String] {
        (json["errors"]?.arrayValue ?? []).compactMap { error in
            guard let field = error["field"]?.stringValue, let message = error["message"]?.stringValue else { return nil }
            return "\(field): \(message)"
        }
    }

    @Test func aDeclaredParameterIsEnforcedWithoutHandlerCode() async throws {
        // The handler only reports what it was given: every check is the declaration's.
        let route = APIRoute(
            "GET", "/things", summary: "Things.", access: .open,
            query: [
                .integer("limit", "How many.", 1...10),
                .oneOf("status", "Which.", ActivityStatus.self),
                .pattern("after", "After.", "^t_[0-9]{1,3}$", message: "must be a thing id") { Int($0.dropFirst(2)) },
            ],
            responses: [(200, "Things")]
        ) { request in
            APIJSON.response([
                "limit": request.query.int("limit").map { .integer(Int64($0)) } ?? .null,
                "status": APIJSON.optional(request.query["status", as: ActivityStatus.self]?.rawValue),
                "after": request.query["after", as: Int.self].map { .integer(Int64($0)) } ?? .null,
            ])
        }
        let dispatcher = Self.dispatcher([route])

        let fine = await Self.call(dispatcher, "GET", "/things", query: [("limit", "3"), ("status", "ended"), ("after", "t_42")])
        #expect(fine.status == 200)
        #expect(fine.json == ["limit": 3, "status": "ended", "after": 42])
        let none = await Self.call(dispatcher, "GET", "/things")
        #expect(none.status == 200 && none.json == ["limit": .null, "status": .null, "after": .null])

        let refused = await Self.call(
            dispatcher, "GET", "/things",
            query: [("nope", "1"), ("after", "t_1234"), ("limit", "11"), ("status", "open"), ("limit", "2")])
        #expect(refused.status == 422)
        #expect(refused.json["detail"] == "The query has invalid parameters.")
        #expect(Self.faults(refused.json) == [
            "nope: is not a query parameter of this route", "limit: must be a whole number from 1 to 10",
            "status: must be started, updated or ended", "after: must be a thing id",
        ])
        for spelling in ["+3", "3.0", "", " 3", "0x3", "99999999999999999999"] {
            let answer = await Self.call(dispatcher, "GET", "/things", query: [("limit", spelling)])
            #expect(answer.status == 422 && Self.faults(answer.json) == ["limit: must be a whole number from 1 to 10"], "\(spelling)")
        }
    }

    @Test func aDeclaredDefaultIsWhatTheHandlerReadsAndWhatTheDocumentShows() async throws {
        let route = APIRoute(
            "GET", "/things", summary: "Things.", access: .open, query: [.integer("limit", "How many.", 1...10, default: 5)],
            responses: [(200, "Things")]
        ) { request in
            APIJSON.response(["limit": .integer(Int64(request.query.defaultedInt("limit")))])
        }
        let dispatcher = Self.dispatcher([route])
        #expect(await Self.call(dispatcher, "GET", "/things").json == ["limit": 5])
        #expect(await Self.call(dispatcher, "GET", "/things", query: [("limit", "3")]).json == ["limit": 3])
        let shown = OpenAPIDocument.make(routes: [route])["paths"]?["/things"]?["get"]?["parameters"]?.arrayValue?.first
        #expect(shown?["schema"] == ["type": "integer", "minimum": 1, "maximum": 10, "default": 5])
        #expect(shown?["description"] == "How many.")

        // Where the parameter does not apply, it is refused by name, and its default stands.
        let inapplicable = APIRoute(
            "GET", "/stream", summary: "A stream.", access: .open,
            query: [.integer("limit", "How many.", 1...10, default: 7, applies: { _ in false })], responses: [(200, "It")]
        ) { request in
            APIJSON.response(["limit": .integer(Int64(request.query.defaultedInt("limit")))])
        }
        let streams = Self.dispatcher([inapplicable])
        #expect(await Self.call(streams, "GET", "/stream").json == ["limit": 7])
        let refused = await Self.call(streams, "GET", "/stream", query: [("limit", "3")])
        #expect(refused.status == 422 && Self.faults(refused.json) == ["limit: is not a query parameter of this route"])
    }

    @Test func faultsTheRouteFindsBesideTheQueryAreAnsweredWithItAndABadPathIdBeforeIt() async throws {
        let route = APIRoute(
            "GET", "/things/{thing_id}", summary: "A thing.", access: .open, query: [.integer("limit", "How many.", 1...10)],
            alsoChecks: { request in
                request.headers["X-Colour"] == "red" ? [] : [.init(field: "X-Colour", message: "must be red")]
            },
            responses: [(200, "The thing")]
        ) { _ in HTTPResponse(status: 200) }
        let dispatcher = Self.dispatcher([route])
        func call(_ path: String, query: [(String, String)], colour: String) async -> (status: Int, json: JSONValue) {
            let response = await dispatcher.handle(HTTPRequest(
                method: "GET", path: path, query: query.map { (name: $0.0, value: $0.1) }, headers: ["X-Colour": colour]))
            return (response.status, (try? JSONValue(parsing: response.body)) ?? .null)
        }
        let both = await call("/things/t1", query: [("limit", "11"), ("nope", "1")], colour: "blue")
        #expect(both.status == 422)
        #expect(Self.faults(both.json) == [
            "nope: is not a query parameter of this route", "limit: must be a whole number from 1 to 10", "X-Colour: must be red",
        ])
        let header = await call("/things/t1", query: [], colour: "blue")
        #expect(header.status == 422 && Self.faults(header.json) == ["X-Colour: must be red"])
        #expect(await call("/things/t1", query: [("limit", "3")], colour: "red").status == 200)
        // The path's id is checked first and answered alone.
        let path = await call("/things/t 1", query: [("limit", "11")], colour: "blue")
        #expect(path.status == 422 && Self.faults(path.json) == ["thing_id: must not contain whitespace or control characters"])
    }

    @Test func aRouteWithoutDeclaredParametersTakesAnyQuery() async throws {
        let route = APIRoute("GET", "/plain", summary: "Plain.", access: .open, responses: [(200, "OK")]) { _ in
            HTTPResponse(status: 200)
        }
        #expect(await Self.call(Self.dispatcher([route]), "GET", "/plain", query: [("anything", "1")]).status == 200)
    }

    @Test func theHandlerReadsTheBodyByTheDeclaredSchema() async throws {
        let route = APIRoute(
            "POST", "/things", summary: "Make a thing.", access: .open, body: RequestSchemas.empty, responses: [(204, "Made")]
        ) { request in
            try request.body().finish()
            return HTTPResponse(status: 204)
        }
        let dispatcher = Self.dispatcher([route])
        #expect(await Self.call(dispatcher, "POST", "/things", body: "{}").status == 204)
        let unknown = await Self.call(dispatcher, "POST", "/things", body: #"{"colour":"red"}"#)
        #expect(unknown.status == 422 && Self.faults(unknown.json).map { $0.prefix(7) } == ["colour:"])
        #expect(await Self.call(dispatcher, "POST", "/things", body: "{").status == 400)
    }

    @Test func parameterRulesAreCheckedAsTheirSchemasSay() {
        // The list's document pattern and its item checks agree on spaces and commas.
        let types = QueryParameter.list("types", "Types.", item: .eventPattern) { EventPattern($0) }
        let read = { (text: String) -> [String]? in
            switch types.read(text) {
            case .success(let value): (value as? [EventPattern])?.map(\.description)
            case .failure: nil
            }
        }
        #expect(read("push.sent") == ["push.sent"])
        #expect(read("push.sent, activity.*") == ["push.sent", "activity.*"])
        #expect(read("push.sent,,activity.*") == nil)
        guard case .failure(let faults) = types.read("push.sent,nope") else {
            Issue.record("a list with an unknown type was taken")
            return
        }
        #expect(faults.errors.map(\.field) == ["types[1]"])
    }

    // MARK: - The document and the parser

    /// Whether `text` keeps `schema` as JSON Schema reads a query string: an integer
    /// spelled as JSON spells it, an enum member, a pattern matched (ECMA-262, which
    /// these patterns share with Foundation's), lengths counted in code points.
    static func keeps(_ schema: JSONValue, _ text: String) throws -> Bool {
        if schema["type"] == "integer" {
            guard try DeclaredRulesTests.matches("^-?[0-9]+$", text), let value = Int64(text) else { return false }
            if let minimum = schema["minimum"]?.int64Value, value < minimum { return false }
            if let maximum = schema["maximum"]?.int64Value, value > maximum { return false }
            return true
        }
        if let members = schema["enum"]?.arrayValue, !members.contains(.string(text)) { return false }
        if let pattern = schema["pattern"]?.stringValue, try !DeclaredRulesTests.matches(pattern, text) { return false }
        if let not = schema["not"]?["pattern"]?.stringValue, try DeclaredRulesTests.matches(not, text) { return false }
        let length = text.unicodeScalars.count
        if let minimum = schema["minLength"]?.int64Value, length < minimum { return false }
        if let maximum = schema["maxLength"]?.int64Value, length > maximum { return false }
        return true
    }

    /// Values worth trying on a parameter of `schema`: its bounds and their
    /// neighbours, its members, and samples of every kind the API takes.
    static func samples(_ schema: JSONValue) -> [String] {
        var samples = [
            "", " ", "0", "1", "-1", "+1", "01", "1.5", "1e3", "abc", "50", "199", "200", "201", "1000", "1001",
            "9223372036854775807", "9223372036854775808", "-9223372036854775808",
            "evt_0", "evt_42", "evt_+4", "evt_123456789012345678", "evt_1234567890123456789", "evt_42\n", "evt_", "EVT_1",
            "dlv_7", "dlv_-7", "dlv_1234567890123456789", "1767225600000-42", "0-0", "1-", "1-2-3", "123456789012345678-1",
            "1234567890123456789-1", "1767225600000-wh_0123abcd", "1-wh_", "1-wh_ABC", "1234567890123456-wh_a",
            "push.sent", "activity.*", "*", "push.sent,activity.*", "push.sent, activity.*", " push.sent ", "push.sent,",
            "push.sent,,*", "push.sent,nope", "push.*", "nope.*", "push.sent\t", "started", "ended", "scheduled", "sent",
            "timeline_entry", "timelineEntry", "order-1", "order/1", "order 1", "Order.Attributes", "1Order", "_Order",
            String(repeating: "a", count: 128), String(repeating: "a", count: 129), "é", "a\u{0}b",
        ]
        if let minimum = schema["minimum"]?.int64Value {
            samples += [String(minimum), minimum == .min ? "" : String(minimum - 1)]
        }
        if let maximum = schema["maximum"]?.int64Value {
            samples += [String(maximum), maximum == .max ? "" : String(maximum + 1)]
        }
        samples += (schema["enum"]?.arrayValue ?? []).compactMap(\.stringValue)
        return samples
    }

    @Test func theDocumentAndTheParserCannotDisagree() async throws {
        try await withTemporaryDirectory { dir in
            var configuration = Configuration()
            configuration.port = 0
            configuration.dataDirectory = dir.path
            configuration.adminToken = DispatcherTests.adminToken
            let logger = Logger(level: .error, format: .logfmt, sink: MemoryLogSink())
            let application = try buildApplication(configuration, logger: logger)
            let routes = APIRoutes.all(services: application.services, delivery: nil, requestMetrics: nil)
            await application.shutdown()

            let document = OpenAPIDocument.make(routes: routes)
            var checked = 0
            for route in routes where !route.query.isEmpty {
                let operation = document["paths"]?[route.pattern]?[route.method.lowercased()]
                let shown = (operation?["parameters"]?.arrayValue ?? []).filter { $0["in"] == "query" }
                // The document shows exactly the declared parameters, each with its declaration's schema.
                #expect(shown.compactMap { $0["name"]?.stringValue } == route.query.map(\.name), "\(route.method) \(route.pattern)")
                for parameter in route.query {
                    let schema = try #require(shown.first { $0["name"] == .string(parameter.name) }?["schema"])
                    #expect(schema == parameter.schema)
                    for sample in Self.samples(schema) {
                        let taken = if case .success = parameter.read(sample) { true } else { false }
                        #expect(
                            taken == (try Self.keeps(schema, sample)),
                            "\(route.method) \(route.pattern) ?\(parameter.name)=\(sample.debugDescription)")
                        checked += 1
                    }
                }
            }
            // Every page size has its default in its declaration, and the document shows it.
            let limits = routes.flatMap(\.query).filter { $0.name == "limit" }
            #expect(limits.count == 9 && limits.allSatisfy { $0.schema["default"]?.int64Value != nil })
            // Activities, an activity's sends, devices, schedules, webhooks, deliveries,
            // events, channels, the app's overview, its lookup, its pushes and the
            // exports of pushes and activities declare queries.
            #expect(routes.filter { !$0.query.isEmpty }.count == 13)
            #expect(checked > 500)
        }
    }
}
