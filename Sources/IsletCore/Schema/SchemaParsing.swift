extension FieldSchema {
    /// Reads a map of field definitions (`{name: {type, required?, nullable?,
    /// fields?, items?, date_encoding?, enum?}}`), answering the fields and every
    /// fault with its path. `required` defaults to true and `nullable` to false, as
    /// for a non-optional Swift property.
    public static func parseFields(_ value: JSONValue, path: String) -> (fields: [String: FieldSchema], problems: [SchemaViolation]) {
        var problems: [SchemaViolation] = []
        guard case .object(let members) = value else {
            return ([:], [SchemaViolation(path: path, message: "must be an object of fields")])
        }
        var fields: [String: FieldSchema] = [:]
        for name in members.keys.sortedByScalars() {
            if name.isEmpty {
                problems.append(SchemaViolation(path: path, message: "a field name is empty"))
                continue
            }
            if let field = parse(members[name]!, path: "\(path).\(name)", problems: &problems) { fields[name] = field }
        }
        return (fields, problems)
    }

    private static let keys: Set = ["type", "required", "nullable", "fields", "items", "date_encoding", "enum"]

    static func parse(_ value: JSONValue, path: String, problems: inout [SchemaViolation]) -> FieldSchema? {
        guard case .object(let members) = value else {
            problems.append(SchemaViolation(path: path, message: "must be a field definition object with a type"))
            return nil
        }
        for key in members.keys.sortedByScalars() where !keys.contains(key) {
            problems.append(SchemaViolation(path: "\(path).\(key)", message: "is not part of a field definition"))
        }
        let kinds = Kind.allCases.map(\.rawValue).joined(separator: ", ")
        guard case .string(let typeName)? = members["type"], let type = Kind(rawValue: typeName) else {
            problems.append(SchemaViolation(path: "\(path).type", message: "must be one of \(kinds)"))
            return nil
        }
        var field = FieldSchema(type)
        for (key, keyPath) in [("required", \FieldSchema.required), ("nullable", \FieldSchema.nullable)] {
            guard let flag = members[key] else { continue }
            guard case .bool(let value) = flag else {
                problems.append(SchemaViolation(path: "\(path).\(key)", message: "must be true or false"))
                continue
            }
            field[keyPath: keyPath] = value
        }
        if let fields = members["fields"] {
            if type != .object {
                problems.append(SchemaViolation(path: "\(path).fields", message: "only an object field has fields"))
            } else {
                let parsed = parseFields(fields, path: "\(path).fields")
                field.fields = parsed.fields
                problems += parsed.problems
            }
        }
        if let items = members["items"] {
            if type != .array {
                problems.append(SchemaViolation(path: "\(path).items", message: "only an array field has items"))
            } else {
                field.items = parse(items, path: "\(path).items", problems: &problems)
            }
        }
        if let encoding = members["date_encoding"] {
            if type != .date {
                problems.append(SchemaViolation(path: "\(path).date_encoding", message: "only a date field has a date encoding"))
            } else if case .string(let name) = encoding, let value = DateEncoding(rawValue: name) {
                field.dateEncoding = value
            } else {
                problems.append(SchemaViolation(
                    path: "\(path).date_encoding",
                    message: "must be one of \(DateEncoding.allCases.map(\.rawValue).joined(separator: ", "))"))
            }
        }
        if let values = members["enum"] {
            // An int's raw values may be written as whole fractions (5.0), as JSON
            // allows; they are kept as integers.
            let raw: (JSONValue) -> JSONValue? = { value in
                switch (type, value) {
                case (.string, .string): value
                case (.int, .integer), (.int, .double): value.int64Value.map(JSONValue.integer)
                default: nil
                }
            }
            if case .array(let list) = values, !list.isEmpty, case let kept = list.compactMap(raw), kept.count == list.count {
                field.allowed = kept
            } else {
                problems.append(SchemaViolation(
                    path: "\(path).enum", message: "must be a non-empty array of raw values, on a string or int field"))
            }
        }
        return field
    }
}

extension ActivityTypeSchema {
    /// Reads a stored schema (as written by ``json``); `nil` when it does not parse.
    public init?(stored value: JSONValue) {
        guard case .string(let formatName)? = value["format"], let format = Format(rawValue: formatName) else { return nil }
        let attributes = FieldSchema.parseFields(value["attributes"] ?? [:], path: "attributes")
        let state = FieldSchema.parseFields(value["content_state"] ?? [:], path: "content_state")
        guard attributes.problems.isEmpty, state.problems.isEmpty else { return nil }
        self.init(
            format: format, widgetName: value["widget_name"]?.stringValue, attributes: attributes.fields,
            contentState: state.fields)
    }
}
