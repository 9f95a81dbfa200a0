import Foundation
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
                "responses": .object(responses(route)),
            ]
            var parameters: [JSONValue] = pathParameters(route.pattern).map { name in
                ["name": .string(name), "in": "path", "required": true, "schema": ["type": "string"]]
            }
            for (name, description) in route.query {
                parameters.append([
                    "name": .string(name), "in": "query", "required": false, "description": .string(description),
                    "schema": ["type": "string"],
                ])
            }
            if route.idempotent {
                parameters.append([
                    "name": .string(Idempotency.header), "in": "header", "required": false,
                    "description": "Replays the first answer for 24 hours (Idempotent-Replayed: true); another body with the same key is 422.",
                    "schema": ["type": "string", "maxLength": 255],
                ])
            }
            if !parameters.isEmpty { operation["parameters"] = .array(parameters) }
            if let body = route.body {
                operation["requestBody"] = [
                    "required": true, "content": ["application/json": ["schema": body]],
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
            "paths": .object(paths),
            "components": [
                "securitySchemes": [
                    "adminToken": bearer, "serverKey": bearer, "deviceKey": bearer,
                ],
                "schemas": ["Problem": OpenAPISchemas.problem, "Field": OpenAPISchemas.fieldDefinition],
            ],
        ]
    }

    private static func pathParameters(_ pattern: String) -> [String] {
        pattern.split(separator: "/").compactMap { part in
            part.hasPrefix("{") && part.hasSuffix("}") ? String(part.dropFirst().dropLast()) : nil
        }
    }

    private static func operationID(_ route: APIRoute) -> String {
        let words = route.pattern.split(separator: "/").map { part -> String in
            let clean = part.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "")
                .replacingOccurrences(of: "-", with: "_")
            return clean.split(separator: "_").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        }
        return route.method.lowercased() + words.joined()
    }

    private static func responses(_ route: APIRoute) -> [String: JSONValue] {
        var responses: [String: JSONValue] = [:]
        var statuses = route.responses
        if route.access != .open { statuses += [(401, "Missing or unknown key"), (403, "A key of the wrong kind")] }
        if route.body != nil { statuses += [(400, "Malformed JSON"), (413, "Body over the size limit")] }
        for (status, description) in statuses {
            var response: [String: JSONValue] = ["description": .string(description)]
            if status >= 400 {
                response["content"] = ["application/problem+json": ["schema": ["$ref": "#/components/schemas/Problem"]]]
            } else if status != 204 {
                response["content"] = ["application/json": ["schema": ["type": "object"]]]
            }
            responses[String(status)] = .object(response)
        }
        return responses
    }
}

/// The JSON Schemas of the request bodies (and the problem shape).
enum OpenAPISchemas {
    private static func object(_ properties: [String: JSONValue], required: [String] = []) -> JSONValue {
        var schema: [String: JSONValue] = [
            "type": "object", "properties": .object(properties), "additionalProperties": false,
        ]
        if !required.isEmpty { schema["required"] = .array(required.map(JSONValue.string)) }
        return .object(schema)
    }

    private static let string: JSONValue = ["type": "string"]
    private static let token: JSONValue = ["type": "string", "pattern": "^([0-9a-fA-F]{2}){32,256}$"]
    private static let date: JSONValue = [
        "description": "Unix seconds, or an RFC 3339 date", "oneOf": [["type": "number"], ["type": "string", "format": "date-time"]],
    ]
    private static let anyObject: JSONValue = ["type": "object", "minProperties": 1]
    private static let strings: JSONValue = ["type": "array", "items": ["type": "string"], "minItems": 1]

    static let apns = object(["team_id": string, "key_id": string, "private_key": string], required: ["team_id", "key_id", "private_key"])
    static let createApp = object(
        ["name": string, "bundle_id": string, "apns": apns, "strict_activity_types": ["type": "boolean"]],
        required: ["name", "bundle_id"])
    static let updateApp = object([
        "name": string, "bundle_id": string, "apns": ["oneOf": [apns, ["type": "null"]]],
        "strict_activity_types": ["type": "boolean"],
    ])
    static let registerDevice = object([
        "platform": ["const": "ios"], "environment": ["enum": ["sandbox", "production"]],
        "apns_token": ["oneOf": [token, ["type": "null"], ["const": ""]]], "user_id": ["type": ["string", "null"]],
        "tags": ["type": "array", "items": string],
    ], required: ["platform", "environment"])
    static let tokenOnly = object(["token": token], required: ["token"])
    static let registerActivityToken = object(["activity_type": string, "token": token], required: ["activity_type", "token"])
    static let alert = object(["title": string, "body": string, "sound": string], required: ["title", "body"])
    static let audience: JSONValue = [
        "type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": false,
        "properties": ["user_ids": strings, "device_ids": strings, "tags": strings],
    ]
    static let startActivity = object([
        "activity_id": string, "activity_type": string, "attributes": anyObject, "content_state": anyObject,
        "alert": alert, "audience": audience, "stale_date": date, "relevance_score": ["type": "number"],
        "priority": ["enum": [5, 10]], "end_at": date,
    ], required: ["activity_id", "activity_type", "attributes", "content_state", "alert", "audience"])
    static let updateActivity = object([
        "content_state": anyObject, "alert": alert, "stale_date": date, "relevance_score": ["type": "number"],
        "priority": ["enum": [5, 10]], "end_at": date,
    ], required: ["content_state"])
    static let endActivity = object(["content_state": anyObject, "dismissal_date": date])
    static let fieldDefinition: JSONValue = [
        "type": "object", "required": ["type"],
        "properties": [
            "type": ["enum": ["string", "int", "double", "bool", "date", "url", "object", "array"]],
            "required": ["type": "boolean", "default": true], "nullable": ["type": "boolean", "default": false],
            "fields": ["type": "object", "additionalProperties": ["$ref": "#/components/schemas/Field"]],
            "items": ["$ref": "#/components/schemas/Field"],
            "date_encoding": ["enum": ["seconds_since_2001", "unix", "iso8601"]],
            "enum": ["type": "array", "minItems": 1],
        ],
        "additionalProperties": false,
    ]
    private static let fields: JSONValue = ["type": "object", "additionalProperties": ["$ref": "#/components/schemas/Field"]]
    static let activityType = object([
        "format": ["enum": ["activitykit", "expo-widgets"]], "widget_name": string, "attributes": fields,
        "content_state": fields, "force": ["type": "boolean"],
    ], required: ["attributes", "content_state"])
    static let notification = object(["audience": audience, "alert": alert], required: ["audience", "alert"])
    static let problem = object([
        "type": string, "title": string, "status": ["type": "integer"], "detail": string,
        "errors": ["type": "array", "items": object(["field": string, "message": string])],
    ], required: ["type", "title", "status", "detail"])
}
