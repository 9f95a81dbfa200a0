public import IsletCore

/// Reads an app's ActivityKit attributes type from the text of its Swift source and
/// answers the schema of its attributes and its `ContentState`, as synthesized
/// `Codable` would encode them.
///
/// The answer has this shape (members unordered):
///
/// ```json
/// {"format": "activitykit",
///  "attributes": {"orderNumber": {"type": "int", "required": true, "nullable": false}},
///  "content_state": {
///    "status": {"type": "string", "required": true, "nullable": false, "enum": ["preparing", "on_the_way"]},
///    "courier": {"type": "object", "required": false, "nullable": true, "fields": {…}},
///    "stops": {"type": "array", "required": true, "nullable": false,
///              "items": {"type": "string", "required": true, "nullable": false}}}}
/// ```
///
/// Types are `string`, `int`, `double`, `bool`, `date`, `url`, `array` (with
/// `items`), and `object` (with `fields` for a struct declared in the file, without
/// for a `[String: T]` dictionary). An optional is `required: false, nullable: true`.
///
/// Only stored properties count: not `static` or `class` ones, not computed or `lazy`
/// ones, and not a `let` with a default value, which synthesized decoding skips. A
/// `CodingKeys` enum chooses and renames the keys. Types resolve by name within the
/// file, nested types and extensions included; what cannot be read (a type from
/// another file, an enum without `String` or integer raw values, a generic parameter,
/// a tuple, a closure, a type with its own `init(from:)`) is named, path by path, in
/// the thrown ``SwiftSchemaError``. It is a tokenizer and a light parser, not a
/// compiler: `#if` conditions are not evaluated, and both branches are read.
public enum SwiftSchemaReader {
    /// Reads `source` and answers the schema JSON described above, or throws.
    ///
    /// The root is the type named `typeName` (a simple name, or a dotted path such as
    /// `Outer.Attributes`) or, without one, the single type whose inheritance clause
    /// (or an extension's) names `ActivityAttributes`.
    public static func schema(fromSwift source: String, typeName: String? = nil) throws(SwiftSchemaError) -> JSONValue {
        let file = try SwiftDeclarationParser.parse(source)
        var resolver = SwiftSchemaResolver(file: file)
        let root = try resolver.root(named: typeName)
        return try resolver.schema(of: root)
    }
}

/// Why a Swift source could not be read as an ActivityKit schema, with one line per
/// property path (or source line) that could not be read.
public struct SwiftSchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case noActivityAttributes, ambiguousRoot, typeNotFound, unsupported, syntax
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// No type in the source conforms to `ActivityAttributes`.
        public static let noActivityAttributes = Code(.noActivityAttributes)
        /// Several types could be the root and none was chosen, or the chosen name
        /// fits several nested types.
        public static let ambiguousRoot = Code(.ambiguousRoot)
        /// A type the schema needs is not declared in the source (it comes from
        /// another file or module), or the chosen root is not there.
        public static let typeNotFound = Code(.typeNotFound)
        /// A property's type is one synthesized `Codable` cannot decode or this
        /// reader cannot follow: an enum without raw values, a generic parameter, a
        /// tuple, a closure, a recursive type, custom decoding.
        public static let unsupported = Code(.unsupported)
        /// The source is not well-formed enough to read: an unterminated string or
        /// comment, unbalanced braces, a missing type.
        public static let syntax = Code(.syntax)

        /// The code's name.
        public var description: String { base.rawValue }

        /// What went wrong, as the start of a sentence for people.
        public var summary: String {
            switch base {
            case .noActivityAttributes: "no type in it conforms to ActivityAttributes"
            case .ambiguousRoot: "it is not clear which type is the ActivityAttributes type; name it with --type"
            case .typeNotFound: "it uses types that are not declared in this file"
            case .unsupported: "it has properties a schema cannot express"
            case .syntax: "it is not Swift that can be read"
            }
        }
    }

    /// What went wrong; when problems of both kinds were found, `unsupported`.
    public let code: Code
    /// One line per property path or source line that could not be read, as
    /// `content_state.courier.vehicle: type Vehicle is not defined in this file`.
    public let problems: [String]

    /// Creates an error.
    public init(_ code: Code, problems: [String]) {
        self.code = code
        self.problems = problems
    }

    /// The code and every problem, as `typeNotFound: attributes.x: …; content_state.y: …`.
    public var description: String { "\(code): \(problems.joined(separator: "; "))" }
}

/// Turns parsed declarations into the schema, collecting every problem on the way.
private struct SwiftSchemaResolver {
    /// A field's schema before `required` and `nullable` are written.
    struct Resolved {
        var schema: [String: JSONValue]
        var isOptional = false
    }

    /// Where names are looked up: a declaration, with its generic parameters bound.
    struct Scope {
        var declaration: Int?
        var bindings: [String: Binding] = [:]
    }

    /// A generic argument, with the scope it was written in.
    struct Binding {
        var type: SwiftTypeRef
        var scope: Scope
    }

    private let file: SwiftSourceFile
    private var problems: [String] = []
    private var missingTypesOnly = true
    /// The generic instances being expanded, to refuse recursive types.
    private var expanding: [String] = []

    init(file: SwiftSourceFile) {
        self.file = file
    }

    private func declaration(_ position: Int) -> SwiftDeclaration { file.declarations[position] }

    private mutating func report(_ problem: String, missingType: Bool = false) {
        problems.append(problem)
        if !missingType { missingTypesOnly = false }
    }

    // MARK: Root

    /// The root type: the one named, or the one conforming to `ActivityAttributes`.
    func root(named typeName: String?) throws(SwiftSchemaError) -> Int {
        let candidates: [Int]
        if let typeName {
            let path = typeName.split(separator: ".").map { String($0).trimmingSpaces }
            if let found = lookup(path, from: nil) {
                candidates = [dealiased(found) ?? found]
            } else {
                candidates = path.count == 1 ? typeDeclarations.filter { declaration($0).name == typeName } : []
            }
            guard !candidates.isEmpty else {
                throw SwiftSchemaError(.typeNotFound, problems: ["type \(typeName) is not defined in this file"])
            }
            guard candidates.count == 1 else {
                let names = candidates.map(qualifiedName).joined(separator: ", ")
                throw SwiftSchemaError(.ambiguousRoot,
                    problems: ["several types are named \(typeName): \(names); name one by its full path"])
            }
        } else {
            candidates = typeDeclarations.filter { position in
                declaration(position).inheritance.contains { type in
                    if case .named(let components) = type { return components.last?.name == "ActivityAttributes" }
                    return false
                }
            }
            guard !candidates.isEmpty else {
                throw SwiftSchemaError(.noActivityAttributes,
                    problems: ["no type in this file conforms to ActivityAttributes; name the root type"])
            }
            guard candidates.count == 1 else {
                let names = candidates.map(qualifiedName).joined(separator: ", ")
                throw SwiftSchemaError(.ambiguousRoot,
                    problems: ["several types conform to ActivityAttributes: \(names); name the root type"])
            }
        }
        let root = candidates[0]
        let kind = declaration(root).kind
        guard kind == .structure || kind == .classType else {
            throw SwiftSchemaError(.unsupported,
                problems: ["\(qualifiedName(root)) is \(describe(kind)); ActivityAttributes must be a struct"])
        }
        return root
    }

    private var typeDeclarations: [Int] {
        file.declarations.indices.filter {
            [.structure, .classType, .enumeration, .actor].contains(declaration($0).kind)
        }
    }

    private func qualifiedName(_ position: Int) -> String {
        var names = [declaration(position).name]
        var parent = declaration(position).parent
        while let outer = parent {
            names.insert(declaration(outer).name, at: 0)
            parent = declaration(outer).parent
        }
        return names.joined(separator: ".")
    }

    private func describe(_ kind: SwiftDeclaration.Kind) -> String {
        switch kind {
        case .structure: "a struct"
        case .classType: "a class"
        case .enumeration: "an enum"
        case .actor: "an actor"
        case .protocolType: "a protocol"
        case .extensionBlock: "an extension"
        case .typeAlias: "a type alias"
        }
    }

    // MARK: Schema

    /// The schema of `root`'s attributes and its `ContentState`, or every problem met.
    mutating func schema(of root: Int) throws(SwiftSchemaError) -> JSONValue {
        expanding.append("\(root)<>")
        let attributes = objectFields(of: root, scope: Scope(declaration: root), path: "attributes")
        expanding.removeAll()
        var contentState: [String: JSONValue] = [:]
        if member("ContentState", in: root) == nil {
            report("content_state: \(qualifiedName(root)) has no ContentState type in this file", missingType: true)
        } else if let resolved = resolve(.named([SwiftTypeComponent(name: "ContentState")]),
            in: Scope(declaration: root), path: "content_state")
        {
            if !resolved.isOptional, case .object(let fields)? = resolved.schema["fields"] {
                contentState = fields
            } else {
                report("content_state: ContentState must be a struct")
            }
        }
        guard problems.isEmpty else {
            throw SwiftSchemaError(missingTypesOnly ? .typeNotFound : .unsupported, problems: problems)
        }
        return [
            "format": "activitykit",
            "attributes": .object(attributes),
            "content_state": .object(contentState),
        ]
    }

    /// The fields synthesized decoding reads for the struct or class at `position`.
    private mutating func objectFields(of position: Int, scope: Scope, path: String) -> [String: JSONValue] {
        let type = declaration(position)
        if type.decodesItself {
            report("\(path): \(type.name) decodes itself with init(from:); only synthesized Codable can be read")
        }
        var fields: [String: JSONValue] = [:]
        for (key, property) in codedProperties(of: position, path: path) {
            let fieldPath = "\(path).\(key)"
            if let wrapper = property.wrapper {
                report("\(fieldPath): the property wrapper or macro @\(wrapper) changes how \(property.name) is encoded")
                continue
            }
            if property.isTuplePattern {
                report("\(fieldPath): a tuple pattern \(property.name) cannot be decoded by synthesized Codable")
                continue
            }
            guard let propertyType = property.type ?? property.inferredType else {
                report("\(fieldPath): \(property.name) has no type annotation, and its type cannot be read from its default value")
                continue
            }
            if let resolved = resolve(propertyType, in: scope, path: fieldPath) {
                fields[key] = field(resolved)
            }
        }
        return fields
    }

    /// The stored properties synthesized decoding reads, with their JSON keys, in
    /// declaration (or `CodingKeys`) order.
    private mutating func codedProperties(of position: Int, path: String) -> [(String, SwiftProperty)] {
        var stored: [SwiftProperty] = []
        for property in declaration(position).properties
        where !property.isStatic && !property.isComputed && !property.isLazy
            && !stored.contains(where: { $0.name == property.name })
        {
            stored.append(property)
        }
        // A `let` with a default value is never decoded.
        let decoded = { (property: SwiftProperty) in !(property.isLet && property.hasInitializer) }
        guard let keysPosition = member("CodingKeys", in: position),
            declaration(keysPosition).kind == .enumeration
        else {
            return stored.filter(decoded).map { ($0.name, $0) }
        }
        let keys = declaration(keysPosition)
        let stringKeys = keys.inheritance.first.map { isNamed($0, "String") } ?? false
        var result: [(String, SwiftProperty)] = []
        for keyCase in keys.cases {
            var key = keyCase.name
            if stringKeys, case .string(let raw)? = keyCase.rawValue { key = raw }
            guard let property = stored.first(where: { $0.name == keyCase.name }) else {
                report("\(path).\(key): CodingKeys case \(keyCase.name) names no stored property of \(declaration(position).name)")
                continue
            }
            if decoded(property) { result.append((key, property)) }
        }
        return result
    }

    private func field(_ resolved: Resolved) -> JSONValue {
        var members = resolved.schema
        members["required"] = .bool(!resolved.isOptional)
        members["nullable"] = .bool(resolved.isOptional)
        return .object(members)
    }

    private func item(_ resolved: Resolved) -> JSONValue {
        var members = resolved.schema
        members["required"] = true
        members["nullable"] = .bool(resolved.isOptional)
        return .object(members)
    }

    // MARK: Types

    /// The schema of `type` as written in `scope`, or nil after reporting why not.
    private mutating func resolve(_ type: SwiftTypeRef, in scope: Scope, path: String) -> Resolved? {
        switch type {
        case .optional(let wrapped):
            guard var resolved = resolve(wrapped, in: scope, path: path) else { return nil }
            resolved.isOptional = true
            return resolved
        case .array(let element):
            return array(of: element, in: scope, path: path)
        case .dictionary(let key, _):
            return dictionary(keyedBy: key, in: scope, path: path)
        case .tuple(let elements):
            report(elements.isEmpty
                ? "\(path): () has no values to decode"
                : "\(path): the tuple \(type) cannot be decoded by synthesized Codable; use a struct")
            return nil
        case .function:
            report("\(path): the closure type \(type) cannot be decoded")
            return nil
        case .other:
            report("\(path): the type \(type) is not supported; use a concrete type")
            return nil
        case .named(let components):
            return resolveNamed(type, components, in: scope, path: path)
        }
    }

    private mutating func resolveNamed(_ type: SwiftTypeRef, _ components: [SwiftTypeComponent], in scope: Scope,
                                       path: String) -> Resolved?
    {
        let first = components[0]
        if components.count == 1, first.arguments.isEmpty {
            if let binding = scope.bindings[first.name] {
                return resolve(binding.type, in: binding.scope, path: path)
            }
            if isGenericParameter(first.name, from: scope.declaration) {
                report("\(path): \(first.name) is a generic parameter; the schema needs a concrete type")
                return nil
            }
        }
        if let position = lookup(components.map(\.name), from: scope.declaration) {
            return resolveDeclaration(position, arguments: components.last!.arguments, writtenIn: scope,
                spelled: type.description, path: path)
        }
        var unqualified = components
        if unqualified.count == 2, ["Swift", "Foundation", "CoreGraphics", "CoreFoundation"].contains(first.name) {
            unqualified.removeFirst()
        }
        if unqualified.count == 1 {
            let name = unqualified[0].name
            let arguments = unqualified[0].arguments
            if arguments.isEmpty, let scalar = Self.scalarTypes[name] {
                return Resolved(schema: ["type": .string(scalar)])
            }
            switch (name, arguments.count) {
            case ("Optional", 1):
                guard var resolved = resolve(arguments[0], in: scope, path: path) else { return nil }
                resolved.isOptional = true
                return resolved
            case ("Array", 1), ("ContiguousArray", 1), ("ArraySlice", 1), ("Set", 1):
                return array(of: arguments[0], in: scope, path: path)
            case ("Dictionary", 2):
                return dictionary(keyedBy: arguments[0], in: scope, path: path)
            case ("Any", 0), ("AnyObject", 0), ("AnyHashable", 0), ("Never", 0), ("Void", 0), ("Self", 0):
                report("\(path): \(name) cannot be decoded by synthesized Codable; use a concrete type")
                return nil
            default:
                break
            }
        }
        report("\(path): type \(type) is not defined in this file", missingType: true)
        return nil
    }

    private mutating func array(of element: SwiftTypeRef, in scope: Scope, path: String) -> Resolved? {
        guard let items = resolve(element, in: scope, path: "\(path)[]") else { return nil }
        return Resolved(schema: ["type": "array", "items": item(items)])
    }

    /// A dictionary is a free-form object when its keys are `String` or `Int`; any
    /// other key makes `JSONEncoder` write an array of alternating keys and values.
    private mutating func dictionary(keyedBy key: SwiftTypeRef, in scope: Scope, path: String) -> Resolved? {
        // See through the file's type aliases (`typealias ID = String`).
        var key = key
        var aliasScope = scope.declaration
        for _ in 0..<16 {
            guard case .named(let components) = key, let position = lookup(components.map(\.name), from: aliasScope),
                declaration(position).kind == .typeAlias, let target = declaration(position).aliasTarget
            else { break }
            key = target
            aliasScope = declaration(position).parent
        }
        guard isNamed(key, "String") || isNamed(key, "Int") else {
            report("\(path): a dictionary keyed by \(key) is encoded as an array of keys and values; use String keys")
            return nil
        }
        return Resolved(schema: ["type": "object"])
    }

    private mutating func resolveDeclaration(_ position: Int, arguments: [SwiftTypeRef], writtenIn scope: Scope,
                                             spelled: String, path: String) -> Resolved?
    {
        let type = declaration(position)
        let key = "\(position)<\(arguments.map(\.description).joined(separator: ","))>"
        guard !expanding.contains(key) else {
            report("\(path): \(spelled) contains itself; a recursive type cannot be written out as a schema")
            return nil
        }
        expanding.append(key)
        defer { expanding.removeLast() }
        var bindings: [String: Binding] = [:]
        if !type.genericParameters.isEmpty || !arguments.isEmpty {
            guard type.genericParameters.count == arguments.count else {
                report("\(path): \(spelled) needs \(type.genericParameters.count) generic arguments")
                return nil
            }
            for (parameter, argument) in zip(type.genericParameters, arguments) {
                bindings[parameter] = Binding(type: argument, scope: scope)
            }
        }
        switch type.kind {
        case .typeAlias:
            guard let target = type.aliasTarget else { return nil }
            return resolve(target, in: Scope(declaration: type.parent, bindings: bindings), path: path)
        case .structure, .classType:
            let fields = objectFields(of: position, scope: Scope(declaration: position, bindings: bindings), path: path)
            return Resolved(schema: ["type": "object", "fields": .object(fields)])
        case .enumeration:
            return enumeration(position, path: path)
        case .actor, .protocolType, .extensionBlock:
            report("\(path): \(spelled) is \(describe(type.kind)), which synthesized Codable cannot decode")
            return nil
        }
    }

    /// A `String`- or integer-backed enum: its raw type and raw values.
    private mutating func enumeration(_ position: Int, path: String) -> Resolved? {
        let type = declaration(position)
        guard let rawType = type.inheritance.first, case .named(let components) = rawType,
            let kind = components.count == 1 ? Self.rawTypes[components[0].name] : nil
        else {
            report("\(path): enum \(type.name) has no String or Int raw values, so how it is encoded cannot be read")
            return nil
        }
        guard kind == "string" || kind == "int" else {
            report("\(path): enum \(type.name) has raw type \(rawType); only String and integer raw values are supported")
            return nil
        }
        guard !type.cases.isEmpty else {
            report("\(path): enum \(type.name) has no cases")
            return nil
        }
        var values: [JSONValue] = []
        var next: Int64 = 0
        for enumCase in type.cases {
            switch (kind, enumCase.rawValue) {
            case ("string", nil):
                values.append(.string(enumCase.name))
            case ("string", .string(let raw)?):
                values.append(.string(raw))
            case ("int", nil):
                values.append(.integer(next))
                next &+= 1
            case ("int", .number(let text)?) where Self.integer(text) != nil:
                let value = Self.integer(text)!
                values.append(.integer(value))
                next = value &+ 1
            default:
                report("\(path): the raw value of \(type.name).\(enumCase.name) cannot be read")
                return nil
            }
        }
        return Resolved(schema: ["type": .string(kind), "enum": .array(values)])
    }

    // MARK: Names

    private func isNamed(_ type: SwiftTypeRef, _ name: String) -> Bool {
        guard case .named(let components) = type else { return false }
        return components.map(\.description) == [name] || components.map(\.description) == ["Swift", name]
    }

    private func isGenericParameter(_ name: String, from scope: Int?) -> Bool {
        var current = scope
        while let position = current {
            if declaration(position).genericParameters.contains(name) { return true }
            current = declaration(position).parent
        }
        return false
    }

    /// The type or alias named `name` directly inside `scope` (the file, for nil).
    private func member(_ name: String, in scope: Int?) -> Int? {
        let members = scope.map { declaration($0).memberTypes } ?? file.topLevel
        return members.first { declaration($0).kind != .extensionBlock && declaration($0).name == name }
    }

    /// Looks `path` up as Swift would from inside `scope`: its first name in the
    /// innermost enclosing type that has it, the rest as nested types.
    private func lookup(_ path: [String], from scope: Int?) -> Int? {
        guard let first = path.first else { return nil }
        var current = scope
        var found: Int?
        while true {
            if let hit = member(first, in: current) {
                found = hit
                break
            }
            guard let position = current else { break }
            current = declaration(position).parent
        }
        guard var position = found else { return nil }
        for name in path.dropFirst() {
            position = dealiased(position) ?? position
            guard let next = member(name, in: position) else { return nil }
            position = next
        }
        return position
    }

    /// The type a type alias names, when that is declared in the file.
    private func dealiased(_ position: Int, depth: Int = 0) -> Int? {
        let type = declaration(position)
        guard type.kind == .typeAlias, depth < 16 else { return type.kind == .typeAlias ? nil : position }
        guard case .named(let components)? = type.aliasTarget,
            let target = lookup(components.map(\.name), from: type.parent)
        else { return nil }
        return dealiased(target, depth: depth + 1)
    }

    private static let scalarTypes: [String: String] = {
        var table: [String: String] = [
            "String": "string", "Substring": "string", "Character": "string", "UUID": "string",
            "Double": "double", "Float": "double", "Float16": "double", "Float32": "double", "Float64": "double",
            "Float80": "double", "CGFloat": "double", "Decimal": "double", "TimeInterval": "double",
            "Bool": "bool", "Date": "date", "URL": "url",
        ]
        for name in integerTypes { table[name] = "int" }
        return table
    }()

    private static let integerTypes = [
        "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64",
    ]

    /// Raw types an enum may have, by the schema type of its values.
    private static let rawTypes: [String: String] = {
        var table: [String: String] = [
            "String": "string", "Character": "character", "Double": "double", "Float": "double", "Bool": "bool",
        ]
        for name in integerTypes { table[name] = "int" }
        return table
    }()

    /// An integer literal as Swift writes it: signed, with `_`, `0x`, `0o`, `0b`.
    private static func integer(_ literal: String) -> Int64? {
        var text = Substring(literal.replacingUnderscores)
        let negative = text.hasPrefix("-")
        if negative { text = text.dropFirst() }
        var radix = 10
        for (prefix, base) in [("0x", 16), ("0o", 8), ("0b", 2)] where text.hasPrefix(prefix) {
            radix = base
            text = text.dropFirst(2)
        }
        guard let magnitude = Int64(text, radix: radix) else { return nil }
        return negative ? -magnitude : magnitude
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }

    fileprivate var replacingUnderscores: String { filter { $0 != "_" } }
}
