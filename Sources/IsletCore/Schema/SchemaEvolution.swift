extension ActivityTypeSchema {
    /// The schema as the API writes it: `{format, widget_name, attributes, content_state}`.
    public var json: JSONValue {
        [
            "format": .string(format.rawValue), "widget_name": widgetName.map(JSONValue.string) ?? .null,
            "attributes": FieldSchema.json(attributes), "content_state": FieldSchema.json(contentState),
        ]
    }

    /// What in `self` would keep a device from decoding an activity started under
    /// `old`: a field newly required, a changed type, a field no longer optional, a
    /// changed date encoding, enum values taken away, another format or widget.
    public func breakingChanges(from old: ActivityTypeSchema) -> [String] {
        var changes: [String] = []
        if format != old.format { changes.append("format: \(old.format.rawValue) becomes \(format.rawValue)") }
        if widgetName != old.widgetName {
            changes.append("widget_name: \(old.widgetName ?? "none") becomes \(widgetName ?? "none")")
        }
        FieldSchema.compare(old: old.attributes, new: attributes, path: "attributes", into: &changes)
        FieldSchema.compare(old: old.contentState, new: contentState, path: "content_state", into: &changes)
        return changes
    }
}

extension FieldSchema {
    /// The field as the API writes it.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "type": .string(type.rawValue), "required": .bool(required), "nullable": .bool(nullable),
        ]
        if let fields { members["fields"] = FieldSchema.json(fields) }
        if let items { members["items"] = items.json }
        if let dateEncoding { members["date_encoding"] = .string(dateEncoding.rawValue) }
        if let allowed { members["enum"] = .array(allowed) }
        return .object(members)
    }

    /// A map of fields as JSON.
    public static func json(_ fields: [String: FieldSchema]) -> JSONValue {
        .object(fields.mapValues(\.json))
    }

    static func compare(old: [String: FieldSchema], new: [String: FieldSchema], path: String, into changes: inout [String]) {
        for name in new.keys.sorted() {
            let field = new[name]!
            let fieldPath = "\(path).\(name)"
            guard let previous = old[name] else {
                if field.required { changes.append("\(fieldPath): a new required field") }
                continue
            }
            compare(old: previous, new: field, path: fieldPath, into: &changes)
        }
    }

    static func compare(old: FieldSchema, new: FieldSchema, path: String, into changes: inout [String]) {
        if new.type != old.type {
            changes.append("\(path): type \(old.type.rawValue) becomes \(new.type.rawValue)")
            return
        }
        if new.required && !old.required { changes.append("\(path): becomes required") }
        if !new.nullable && old.nullable { changes.append("\(path): no longer takes null") }
        if new.type == .date && new.effectiveDateEncoding != old.effectiveDateEncoding {
            changes.append("\(path): date encoding \(old.effectiveDateEncoding.rawValue) becomes \(new.effectiveDateEncoding.rawValue)")
        }
        if let allowed = new.allowed {
            let removed = (old.allowed ?? []).filter { !allowed.contains($0) }
            if old.allowed == nil {
                changes.append("\(path): becomes an enum")
            } else if !removed.isEmpty {
                changes.append("\(path): enum values removed (\(removed.map(\.jsonText).joined(separator: ", ")))")
            }
        }
        if let fields = new.fields {
            compare(old: old.fields ?? [:], new: fields, path: path, into: &changes)
        }
        if let items = new.items, let oldItems = old.items {
            compare(old: oldItems, new: items, path: "\(path)[]", into: &changes)
        }
    }
}
