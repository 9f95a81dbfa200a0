extension ActivityTypeSchema {
    /// The schema as the API writes it: `{format, widget_name, attributes, content_state}`.
    public var json: JSONValue {
        [
            "format": .string(format.rawValue), "widget_name": widgetName.map(JSONValue.string) ?? .null,
            "attributes": FieldSchema.json(attributes), "content_state": FieldSchema.json(contentState),
        ]
    }

    /// What in `self` would keep a running activity decoding: while activities of
    /// the type run, devices may hold the old app (so payloads valid under `self`
    /// must decode under `old`) or the new one (so the state stored under `old`,
    /// sent again by an end, must decode under `self`). Any difference that breaks
    /// either direction is named: a field added as required or removed while
    /// required, required or optional changed, null newly taken or refused, a
    /// changed type or date encoding, enum values added or removed, another format
    /// or widget.
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
        for name in Set(old.keys).union(new.keys).sortedByScalars() {
            let fieldPath = "\(path).\(name)"
            switch (old[name], new[name]) {
            case (nil, let added?):
                if added.required { changes.append("\(fieldPath): a new required field") }
            case (let removed?, nil):
                if removed.required { changes.append("\(fieldPath): removed, but devices on the old app require it") }
            case (let previous?, let field?):
                compare(old: previous, new: field, path: fieldPath, into: &changes)
            case (nil, nil):
                break
            }
        }
    }

    static func compare(old: FieldSchema, new: FieldSchema, path: String, into changes: inout [String]) {
        if new.type != old.type {
            changes.append("\(path): type \(old.type.rawValue) becomes \(new.type.rawValue)")
            return
        }
        if new.required && !old.required { changes.append("\(path): becomes required") }
        if !new.required && old.required { changes.append("\(path): becomes optional, but devices on the old app require it") }
        if !new.nullable && old.nullable { changes.append("\(path): no longer takes null") }
        if new.nullable && !old.nullable { changes.append("\(path): takes null, which devices on the old app refuse") }
        if new.type == .date && new.effectiveDateEncoding != old.effectiveDateEncoding {
            changes.append("\(path): date encoding \(old.effectiveDateEncoding.rawValue) becomes \(new.effectiveDateEncoding.rawValue)")
        }
        switch (old.allowed, new.allowed) {
        case (nil, _?):
            changes.append("\(path): becomes an enum")
        case (_?, nil):
            changes.append("\(path): no longer an enum, but devices on the old app take only its values")
        case (let before?, let after?):
            let removed = before.filter { !after.contains($0) }
            let added = after.filter { !before.contains($0) }
            if !removed.isEmpty { changes.append("\(path): enum values removed (\(removed.map(\.jsonText).joined(separator: ", ")))") }
            if !added.isEmpty { changes.append("\(path): enum values added (\(added.map(\.jsonText).joined(separator: ", "))), which devices on the old app refuse") }
        case (nil, nil):
            break
        }
        if old.fields != nil || new.fields != nil {
            compare(old: old.fields ?? [:], new: new.fields ?? [:], path: path, into: &changes)
        }
        if let items = new.items, let oldItems = old.items {
            compare(old: oldItems, new: items, path: "\(path)[]", into: &changes)
        }
    }
}
