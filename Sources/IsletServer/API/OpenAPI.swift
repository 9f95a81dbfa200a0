import Foundation
import IsletService
import IsletCore

/// The OpenAPI 3.1 document, built from the same route list the router serves, so
/// it lists exactly the routes there are.
enum OpenAPIDocument {
    static func make(routes: [APIRoute]) -> JSONValue {
        var paths: [String: JSONValue] = [:]
        for route in routes {
            var operation: [String: JSONValue] = [
                "summary": .string(route.summary),
                "operationId": .string(operationID(route)),
                "tags": [.string(tag(route.access))],
                "responses": .object(responses(route)),
            ]
            var parameters: [JSONValue] = pathParameters(route.pattern).map { name in
                ["name": .string(name), "in": "path", "required": true, "schema": PathParameter.format(name).jsonSchema]
            }
            for parameter in route.query {
                parameters.append([
                    "name": .string(parameter.name), "in": "query", "required": false,
                    "description": .string(parameter.description), "schema": parameter.schema,
                ])
            }
            if route.idempotent {
                parameters.append([
                    "name": .string(IdempotencyKey.field), "in": "header", "required": false,
                    "description": "Replays the first answer for 24 hours (Idempotent-Replayed: true); another body with the same key is 422.",
                    "schema": TextFormat.idempotencyKey.jsonSchema,
                ])
            }
            if route.access == .device && route.pattern.contains("{device_id}") {
                parameters.append([
                    "name": .string(DeviceSecrets.header), "in": "header", "required": false,
                    "description": "The device's secret, shown once by the registration that created the device (or a rotation or reset): required for a registered device under the app's device_secrets: required.",
                    "schema": ["type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"],
                ])
            }
            if !parameters.isEmpty { operation["parameters"] = .array(parameters) }
            if let body = route.body {
                operation["requestBody"] = [
                    "required": .bool(body.requiresBody), "content": ["application/json": ["schema": body.jsonSchema]],
                ]
            }
            switch route.access {
            case .open: operation["security"] = []
            case .admin: operation["security"] = [["adminToken": []]]
            case .server: operation["security"] = [["serverKey": []]]
            case .device: operation["security"] = [["deviceKey": []]]
            }
            var item = paths[route.pattern]?.objectValue ?? [:]
            item[route.method.lowercased()] = .object(operation)
            paths[route.pattern] = .object(item)
        }
        let bearer: JSONValue = ["type": "http", "scheme": "bearer"]
        return [
            "openapi": "3.1.0",
            "info": [
                "title": "Islet", "version": .string(IsletVersion.current),
                "description": "A self-hosted server for iOS Live Activities: token registry, send API, lifecycle and durable delivery over APNs.",
            ],
            "tags": [
                ["name": "admin", "description": "Apps and their keys (admin token)."],
                ["name": "device", "description": "Routes the app calls from its devices (device key)."],
                ["name": "server", "description": "Routes the app's backend calls (server key)."],
                ["name": "system", "description": "Open routes: health, version, metrics, this document."],
            ],
            "paths": .object(paths),
            "components": [
                "securitySchemes": [
                    "adminToken": bearer, "serverKey": bearer, "deviceKey": bearer,
                ],
                "schemas": .object(
                    AnswerSchemas.components
                        .merging(["Problem": OpenAPISchemas.problem, "Field": OpenAPISchemas.fieldDefinition], uniquingKeysWith: { $1 })
                        .merging(OpenAPISchemas.fieldVariants, uniquingKeysWith: { $1 })),
            ],
        ]
    }

    private static func tag(_ access: RouteAccess) -> String {
        switch access {
        case .open: "system"
        case .admin: "admin"
        case .server: "server"
        case .device: "device"
        }
    }

    private static func pathParameters(_ pattern: String) -> [String] {
        PathParameter.names(in: pattern)
    }

    private static func operationID(_ route: APIRoute) -> String {
        let words = route.pattern.split(separator: "/").map { part -> String in
            let clean = part.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "")
                .replacingOccurrences(of: "-", with: "_")
            return clean.split(separator: "_").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        }
        return route.method.lowercased() + words.joined()
    }

    /// Every status the route answers: its own, and those of its kind.
    static func statuses(_ route: APIRoute) -> [(status: Int, description: String)] {
        var statuses = route.responses
        func add(_ status: Int, _ description: String) {
            if !statuses.contains(where: { $0.status == status }) { statuses.append((status, description)) }
        }
        if route.access != .open {
            add(401, "Missing or unknown key")
            add(403, "A key of the wrong kind")
        }
        if route.pattern.contains("{app_id}") {
            add(404, route.access == .admin ? "No such app" : "No such app (or another app's: the key is not this app's)")
        }
        let checkedPath = pathParameters(route.pattern).contains { $0 != "app_id" }
        if route.body != nil || checkedPath || !route.query.isEmpty || route.idempotent {
            add(422, "A field, path or query parameter, or header is invalid")
        }
        if route.body != nil {
            add(400, "Malformed JSON, or a NUL in the path or query")
            add(413, "Body over the size limit")
            add(415, "A body that is not application/json")
        }
        if let family = route.family {
            add(429, "Past the app's \(family.rawValue) rate limit (quota-exceeded, with Retry-After)")
        }
        // Refused before any route is chosen.
        add(400, "A NUL in the path or query")
        return statuses.sorted { $0.status < $1.status }
    }

    private static func responses(_ route: APIRoute) -> [String: JSONValue] {
        var responses: [String: JSONValue] = [:]
        for (status, description) in statuses(route) {
            var response: [String: JSONValue] = ["description": .string(description)]
            if let failure = route.failureAnswer, failure.status == status {
                response["content"] = ["application/json": ["schema": failure.schema]]
            } else if status >= 400 {
                response["content"] = ["application/problem+json": ["schema": ["$ref": "#/components/schemas/Problem"]]]
            } else if status != 204 {
                let schema: JSONValue = route.contentType.hasPrefix("text/") ? ["type": "string"] : route.answer ?? ["type": "object"]
                response["content"] = .object([route.contentType: ["schema": schema]])
            }
            if let family = route.family {
                var headers: [String: JSONValue] = [
                    "RateLimit-Policy": [
                        "description": .string("The app's \(family.rawValue) policy: \"\(family.rawValue)\";q=<requests a full bucket admits>;w=<seconds it takes to fill>"),
                        "schema": ["type": "string"],
                    ],
                    "RateLimit": [
                        "description": .string("What is left of it: \"\(family.rawValue)\";r=<requests admitted at once now>;t=<seconds until full>"),
                        "schema": ["type": "string"],
                    ],
                ]
                if status == 429 {
                    headers["Retry-After"] = [
                        "description": "Seconds until a request may be admitted", "schema": ["type": "integer", "minimum": 1],
                    ]
                }
                response["headers"] = .object(headers)
            }
            responses[String(status)] = .object(response)
        }
        return responses
    }
}

/// The JSON Schemas of the shared components: a field definition of an activity
/// type and the problem shape.
enum OpenAPISchemas {
    /// A field definition: one of its variants (``fieldVariants``), a component each,
    /// so that a generated client makes a type of each (a client generator reads a
    /// union of references, where inline variants of a self-referring union defeat
    /// it).
    static let fieldDefinition: JSONValue = [
        "description": "A field of the app's Swift type: {type, required?, nullable?, fields?, items?, date_encoding?, enum?}.",
        "oneOf": .array(fieldVariantNames.map { ["$ref": .string("#/components/schemas/\($0)")] }),
    ]

    /// The variants' component names, in the order `oneOf` lists them.
    static let fieldVariantNames = ["FieldString", "FieldInt", "FieldScalar", "FieldDate", "FieldObject", "FieldArray"]

    /// One variant of a field definition per type, each taking only the keys its type
    /// may have (as `FieldSchema.parseFields` reads them).
    static let fieldVariants: [String: JSONValue] = {
        func variant(_ type: JSONValue, _ extra: [String: JSONValue] = [:]) -> JSONValue {
            var properties: [String: JSONValue] = [
                "type": type, "required": ["type": "boolean", "default": true],
                "nullable": ["type": "boolean", "default": false],
            ]
            for (key, value) in extra { properties[key] = value }
            return ["type": "object", "required": ["type"], "properties": .object(properties), "additionalProperties": false]
        }
        let field: JSONValue = ["$ref": "#/components/schemas/Field"]
        let integer: JSONValue = ["type": "integer", "minimum": .integer(Int64.min), "maximum": .integer(Int64.max)]
        let dateEncodings = JSONValue.array(DateEncoding.allCases.map { .string($0.rawValue) })
        return [
            "FieldString": variant(
                ["type": "string", "const": "string"], ["enum": ["type": "array", "minItems": 1, "items": ["type": "string"]]]),
            "FieldInt": variant(["type": "string", "const": "int"], ["enum": ["type": "array", "minItems": 1, "items": integer]]),
            "FieldScalar": variant(["type": "string", "enum": ["double", "bool", "url"]]),
            "FieldDate": variant(["type": "string", "const": "date"], ["date_encoding": ["type": "string", "enum": dateEncodings]]),
            "FieldObject": variant(
                ["type": "string", "const": "object"],
                ["fields": ["type": "object", "propertyNames": ["minLength": 1], "additionalProperties": field]]),
            "FieldArray": variant(["type": "string", "const": "array"], ["items": field]),
        ]
    }()

    static let problem: JSONValue = [
        "type": "object", "additionalProperties": false, "required": ["type", "title", "status", "detail"],
        "properties": [
            "type": ["type": "string"], "title": ["type": "string"], "status": ["type": "integer"],
            "detail": ["type": "string"],
            "errors": [
                "type": "array",
                "items": [
                    "type": "object", "additionalProperties": false, "required": ["field", "message"],
                    "properties": ["field": ["type": "string"], "message": ["type": "string"]],
                ],
            ],
            "violated-policies": [
                "type": "array", "items": ["type": "string"],
                "description": "For the quota-exceeded type: the rate-limit policies whose quota was spent.",
            ],
        ],
    ]
}
