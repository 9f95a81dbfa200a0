import IsletCore

/// The JSON Schemas of the API's success answers, for the OpenAPI document: each
/// route names its answer's schema (`APIRoute.answer`), and the shapes several
/// routes share are components (`#/components/schemas/<Name>`), so that a client
/// generated from the document is typed. schemathesis checks every answer it gets
/// against them (OpenAPIConformanceTests).
///
/// A schema lists the keys an answer always carries as `required` and leaves other
/// keys open (no `additionalProperties: false`): a newer server may add a field, and
/// an older client ignores it. A key written only sometimes is left out of
/// `required`; a key always written whose value may be `null` is required, and its
/// type allows `null`.
enum AnswerSchemas {
    /// Every shared shape, by name: each area's, merged.
    static let components: [String: JSONValue] = {
        var all: [String: JSONValue] = [:]
        for area in [systemComponents, deviceComponents, activityComponents, configurationComponents] {
            // Each name once: an area that took another's name would change its shape.
            all.merge(area, uniquingKeysWith: { first, _ in preconditionFailure("an answer schema named twice: \(first)") })
        }
        return all
    }()

    // MARK: Building blocks

    /// An object with `properties`, of which `required` are always there.
    static func object(_ properties: [String: JSONValue], required: [String] = []) -> JSONValue {
        var schema: [String: JSONValue] = ["type": "object", "properties": .object(properties)]
        if !required.isEmpty { schema["required"] = .array(required.sorted().map(JSONValue.string)) }
        return .object(schema)
    }

    /// `{items: [item], next_cursor: string|null}`: a page of a list.
    static func page(of item: JSONValue, extra: [String: JSONValue] = [:], required: [String] = []) -> JSONValue {
        var properties: [String: JSONValue] = ["items": array(item), "next_cursor": nullable(string)]
        for (key, value) in extra { properties[key] = value }
        return object(properties, required: ["items"] + required)
    }

    /// A reference to the shared shape `name`.
    static func ref(_ name: String) -> JSONValue { ["$ref": .string("#/components/schemas/\(name)")] }

    /// An array of `item`.
    static func array(_ item: JSONValue) -> JSONValue { ["type": "array", "items": item] }

    /// `schema`, or `null` (an `enum` takes `null` among its values too).
    static func nullable(_ schema: JSONValue) -> JSONValue {
        if case .object(var object) = schema, case .string(let type)? = object["type"] {
            object["type"] = [.string(type), "null"]
            if case .array(let values)? = object["enum"], !values.contains(.null) { object["enum"] = .array(values + [.null]) }
            return .object(object)
        }
        return ["anyOf": [schema, ["type": "null"]]]
    }

    /// One of `values`.
    static func oneOf(_ values: [String]) -> JSONValue { ["type": "string", "enum": .array(values.map(JSONValue.string))] }

    static let string: JSONValue = ["type": "string"]
    static let integer: JSONValue = ["type": "integer"]
    static let number: JSONValue = ["type": "number"]
    static let boolean: JSONValue = ["type": "boolean"]
    /// An RFC 3339 time, as every time the API answers.
    static let time: JSONValue = ["type": "string", "format": "date-time"]
    /// Any JSON object (an activity's content state, attributes: the app's own).
    static let anyObject: JSONValue = ["type": "object"]
    /// Any JSON value.
    static let anyValue: JSONValue = [:]
}
