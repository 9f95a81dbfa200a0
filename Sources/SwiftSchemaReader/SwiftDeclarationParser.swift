/// A type as written in Swift source, as far as ``SwiftSchemaReader`` reads types.
indirect enum SwiftTypeRef: Sendable, Equatable, CustomStringConvertible {
    /// `Name`, `Outer.Inner`, `Array<Int>`: one or more components with their
    /// generic arguments.
    case named([SwiftTypeComponent])
    /// `T?`, or `T!`.
    case optional(SwiftTypeRef)
    /// `[T]`.
    case array(SwiftTypeRef)
    /// `[K: V]`.
    case dictionary(key: SwiftTypeRef, value: SwiftTypeRef)
    /// `()` or `(A, B)`; a parenthesised single type is that type.
    case tuple([SwiftTypeRef])
    /// `(A) -> B`, spelled back.
    case function(String)
    /// Anything else (`some P`, `any P`, `A & B`, `T.Type`, `T...`), spelled back.
    case other(String)

    var description: String {
        switch self {
        case .named(let components): components.map(\.description).joined(separator: ".")
        case .optional(let wrapped):
            switch wrapped {
            case .function, .other: "(\(wrapped))?"
            default: "\(wrapped)?"
            }
        case .array(let element): "[\(element)]"
        case .dictionary(let key, let value): "[\(key): \(value)]"
        case .tuple(let elements): "(\(elements.map(\.description).joined(separator: ", ")))"
        case .function(let text), .other(let text): text
        }
    }
}

/// One dotted component of a named type: `Array<Int>` in `Swift.Array<Int>`.
struct SwiftTypeComponent: Sendable, Equatable, CustomStringConvertible {
    var name: String
    var arguments: [SwiftTypeRef] = []

    var description: String {
        arguments.isEmpty ? name : "\(name)<\(arguments.map(\.description).joined(separator: ", "))>"
    }
}

/// A `var` or `let` (one name of it, for `var a, b: Int`).
struct SwiftProperty: Sendable {
    var name: String
    var line: Int
    var type: SwiftTypeRef?
    /// The type a literal default value gives a property without an annotation.
    var inferredType: SwiftTypeRef?
    var isLet = false
    var hasInitializer = false
    var isStatic = false
    var isLazy = false
    var isComputed = false
    var isTuplePattern = false
    /// The property wrapper (or attached macro) applied to it, when there is one.
    var wrapper: String?
}

/// A raw value as written after `case name =`.
enum SwiftRawLiteral: Sendable, Equatable {
    case string(String)
    case number(String)
    case other(String)
}

/// One case of an enum.
struct SwiftEnumCase: Sendable {
    var name: String
    var line: Int
    var rawValue: SwiftRawLiteral?
    var hasAssociatedValues = false
}

/// A type, extension or type alias declared in the file.
struct SwiftDeclaration: Sendable {
    enum Kind: Sendable, Equatable {
        case structure, classType, enumeration, actor, protocolType, extensionBlock, typeAlias
    }

    var kind: Kind
    var name: String
    var line: Int
    /// The enclosing type (an extension's members count as its extended type's).
    var parent: Int?
    var extendedPath: [String] = []
    var genericParameters: [String] = []
    var inheritance: [SwiftTypeRef] = []
    var aliasTarget: SwiftTypeRef?
    var properties: [SwiftProperty] = []
    var cases: [SwiftEnumCase] = []
    /// Indices of the types and aliases declared inside.
    var memberTypes: [Int] = []
    /// Whether it declares `init(from:)`, so synthesized decoding does not apply.
    var decodesItself = false
}

/// Every declaration in a file, flat, with the file's own members at ``topLevel``.
struct SwiftSourceFile: Sendable {
    var declarations: [SwiftDeclaration]
    var topLevel: [Int]
}

/// A light recursive-descent parser over ``SwiftToken``s that keeps the
/// declarations a schema needs (types, stored properties, enum cases, type aliases)
/// and skips everything else as balanced token groups: function bodies, accessors,
/// default values and top-level code.
struct SwiftDeclarationParser {
    private let tokens: [SwiftToken]
    private var index = 0
    private var declarations: [SwiftDeclaration] = []
    private var topLevel: [Int] = []

    private static let modifiers: Set<String> = [
        "public", "private", "fileprivate", "internal", "open", "package", "static", "class", "final", "lazy",
        "weak", "unowned", "mutating", "nonmutating", "override", "required", "convenience", "dynamic",
        "nonisolated", "indirect", "optional", "prefix", "postfix", "infix", "consuming", "borrowing",
        "distributed", "isolated", "__consuming",
    ]
    private static let declarationKeywords: Set<String> = [
        "struct", "class", "actor", "enum", "protocol", "extension", "var", "let", "case", "typealias", "import",
        "func", "init", "deinit", "subscript", "macro", "operator", "precedencegroup", "associatedtype",
    ]
    /// Attributes on a property that are not property wrappers.
    private static let plainAttributes: Set<String> = [
        "MainActor", "Sendable", "ObservationIgnored", "ObservationTracked", "NSCopying", "NSManaged", "IBOutlet",
        "IBInspectable", "GKInspectable",
    ]

    private init(tokens: [SwiftToken]) {
        self.tokens = tokens
    }

    /// Parses `source` into its declarations, with extensions' nested types and
    /// conformances moved onto the types they extend.
    static func parse(_ source: String) throws(SwiftSchemaError) -> SwiftSourceFile {
        var parser = SwiftDeclarationParser(tokens: try SwiftSourceTokenizer.tokenize(source))
        try parser.parseMembers(of: nil, openedOnLine: nil)
        parser.mergeExtensions()
        return SwiftSourceFile(declarations: parser.declarations, topLevel: parser.topLevel)
    }

    // MARK: Tokens

    private var current: SwiftToken { tokens[index] }

    private func token(at offset: Int) -> SwiftToken {
        tokens[min(index + offset, tokens.count - 1)]
    }

    @discardableResult
    private mutating func advance() -> SwiftToken {
        let token = tokens[index]
        if token.kind != .end { index += 1 }
        return token
    }

    private func syntax(_ message: String, line: Int) -> SwiftSchemaError {
        SwiftSchemaError(.syntax, problems: ["line \(line): \(message)"])
    }

    private mutating func expect(_ mark: String, after what: String) throws(SwiftSchemaError) {
        guard current.isMark(mark) else {
            throw syntax("expected '\(mark)' \(what)\(current.kind == .end ? "" : ", found '\(current.text)'")",
                line: current.line)
        }
        advance()
    }

    /// Skips the group opened by the current `{`, `(` or `[`, through its closer.
    private mutating func skipGroup() throws(SwiftSchemaError) {
        var open: [(mark: String, line: Int)] = []
        repeat {
            let token = advance()
            if token.kind == .end, let last = open.last {
                throw syntax("'\(last.mark)' is never closed", line: last.line)
            }
            guard token.kind == .punctuation else { continue }
            switch token.text {
            case "{", "(", "[": open.append((token.text, token.line))
            case "}", ")", "]":
                let expected = ["{": "}", "(": ")", "[": "]"][open.last?.mark ?? ""]
                guard expected == token.text else { throw syntax("unexpected '\(token.text)'", line: token.line) }
                open.removeLast()
            default: break
            }
        } while !open.isEmpty
    }

    private var atGroupOpener: Bool { current.isMark("{") || current.isMark("(") || current.isMark("[") }

    private func startsDeclaration(_ token: SwiftToken) -> Bool {
        if token.isMark("@") || token.isMark("#") || token.isMark("}") { return true }
        return token.kind == .identifier && !token.isEscaped
            && (Self.declarationKeywords.contains(token.text) || Self.modifiers.contains(token.text))
    }

    // MARK: Declarations

    private mutating func register(_ declaration: SwiftDeclaration) -> Int {
        let position = declarations.count
        declarations.append(declaration)
        if let parent = declaration.parent {
            declarations[parent].memberTypes.append(position)
        } else {
            topLevel.append(position)
        }
        return position
    }

    /// Reads declarations up to the `}` that closes the body opened on `openedOnLine`
    /// (or to the end of the file, for the file itself).
    private mutating func parseMembers(of parent: Int?, openedOnLine: Int?) throws(SwiftSchemaError) {
        while true {
            if current.kind == .end {
                if let openedOnLine { throw syntax("'{' is never closed", line: openedOnLine) }
                return
            }
            if current.isMark("}") {
                guard openedOnLine != nil else { throw syntax("unexpected '}'", line: current.line) }
                advance()
                return
            }
            if current.isMark(";") {
                advance()
                continue
            }
            try parseDeclaration(in: parent)
        }
    }

    private mutating func parseDeclaration(in parent: Int?) throws(SwiftSchemaError) {
        let start = index
        var attributes: [String] = []
        var modifiers: Set<String> = []
        while true {
            if current.isMark("@") {
                advance()
                var name = current.kind == .identifier ? advance().text : ""
                while current.isMark("."), token(at: 1).kind == .identifier {
                    advance()
                    name += "." + advance().text
                }
                attributes.append(name)
                if current.isMark("("), !current.followsSpace { try skipGroup() }
                continue
            }
            if current.kind == .identifier, !current.isEscaped, Self.modifiers.contains(current.text) {
                if current.text == "class" {
                    let next = token(at: 1)
                    let isModifier = next.kind == .identifier && !next.isEscaped
                        && (Self.modifiers.contains(next.text)
                            || ["var", "let", "func", "subscript", "init"].contains(next.text))
                    if !isModifier { break }
                }
                modifiers.insert(advance().text)
                if current.isMark("("), !current.followsSpace { try skipGroup() }
                continue
            }
            break
        }
        if current.kind == .identifier, !current.isEscaped {
            switch current.text {
            case "struct", "class", "actor", "enum", "protocol", "extension":
                try parseTypeDeclaration(in: parent)
                return
            case "var", "let":
                try parseVariables(in: parent, attributes: attributes, modifiers: modifiers)
                return
            case "case":
                try parseCases(in: parent)
                return
            case "typealias":
                try parseTypeAlias(in: parent)
                return
            case "func", "init", "deinit", "subscript", "macro", "operator", "precedencegroup", "associatedtype",
                "import":
                try skipFunctionLike(in: parent)
                return
            default:
                break
            }
        }
        guard index == start else { return }
        // Something that declares nothing a schema needs: skip it a group at a time.
        if atGroupOpener {
            try skipGroup()
        } else if current.isMark(")") || current.isMark("]") {
            throw syntax("unexpected '\(current.text)'", line: current.line)
        } else {
            advance()
        }
    }

    private mutating func parseTypeDeclaration(in parent: Int?) throws(SwiftSchemaError) {
        let keyword = advance()
        let kind: SwiftDeclaration.Kind =
            switch keyword.text {
            case "struct": .structure
            case "class": .classType
            case "actor": .actor
            case "enum": .enumeration
            case "protocol": .protocolType
            default: .extensionBlock
            }
        var declaration = SwiftDeclaration(kind: kind, name: "", line: keyword.line, parent: parent)
        if kind == .extensionBlock {
            let extended = try parseType()
            if case .named(let components) = extended { declaration.extendedPath = components.map(\.name) }
            declaration.name = extended.description
        } else {
            guard current.kind == .identifier else {
                throw syntax("expected a name after '\(keyword.text)'", line: current.line)
            }
            declaration.name = advance().text
            if current.isMark("<") { declaration.genericParameters = try parseGenericParameters() }
        }
        if current.isMark(":") {
            advance()
            declaration.inheritance = try parseInheritance()
        }
        // A `where` clause, or a primary associated type list: nothing to keep.
        while !current.isMark("{") {
            guard current.kind != .end, !current.isMark("}"), !current.isMark(";") else {
                throw syntax("expected '{' to open the body of \(declaration.name)", line: current.line)
            }
            if atGroupOpener { try skipGroup() } else { advance() }
        }
        let brace = advance()
        let position = register(declaration)
        try parseMembers(of: position, openedOnLine: brace.line)
    }

    private mutating func parseGenericParameters() throws(SwiftSchemaError) -> [String] {
        let open = advance()
        var names: [String] = []
        var depth = 1
        var expectingName = true
        while depth > 0 {
            let token = advance()
            switch token.kind {
            case .end:
                throw syntax("'<' is never closed", line: open.line)
            case .punctuation where token.text == "<":
                depth += 1
            case .punctuation where token.text == ">":
                depth -= 1
            case .punctuation where token.text == "," && depth == 1:
                expectingName = true
            case .identifier where expectingName && depth == 1 && !token.isWord("each"):
                names.append(token.text)
                expectingName = false
            default:
                break
            }
        }
        return names
    }

    private mutating func parseInheritance() throws(SwiftSchemaError) -> [SwiftTypeRef] {
        var types: [SwiftTypeRef] = []
        while true {
            if current.isMark("~") {
                advance()
                _ = try parseType()
            } else {
                types.append(try parseType())
            }
            guard current.isMark(",") else { return types }
            advance()
        }
    }

    private mutating func parseVariables(in parent: Int?, attributes: [String], modifiers: Set<String>)
        throws(SwiftSchemaError)
    {
        let keyword = advance()
        let wrapper = attributes.first { name in
            guard let first = name.first, first.isUppercase else { return false }
            return !Self.plainAttributes.contains(name) && !name.hasSuffix("Actor")
        }
        var properties: [SwiftProperty] = []
        var untyped: [Int] = []
        while true {
            var property = SwiftProperty(name: current.text, line: current.line)
            if current.isMark("(") {
                let start = index
                try skipGroup()
                property.name = tokens[start..<index].map(\.text).joined()
                property.isTuplePattern = true
            } else if current.kind == .identifier {
                advance()
            } else {
                guard parent == nil else {
                    throw syntax("expected a name after '\(keyword.text)'", line: current.line)
                }
                return  // Top-level code this reader does not need.
            }
            property.isLet = keyword.text == "let"
            property.isStatic = modifiers.contains("static") || modifiers.contains("class")
            property.isLazy = modifiers.contains("lazy")
            property.wrapper = wrapper
            if current.isMark(":") {
                advance()
                property.type = try parseType()
            }
            if current.isMark("=") {
                advance()
                let range = try skipExpression()
                property.hasInitializer = true
                property.inferredType = inferredType(of: range)
            }
            if current.isMark("{") {
                let first = token(at: 1)
                property.isComputed = !(first.isWord("willSet") || first.isWord("didSet"))
                try skipGroup()
            }
            if property.type != nil {
                // `var a, b: Int`: the annotation covers the names before it.
                for waiting in untyped { properties[waiting].type = property.type }
                untyped.removeAll()
            } else if !property.hasInitializer && !property.isComputed {
                untyped.append(properties.count)
            }
            properties.append(property)
            guard current.isMark(",") else { break }
            advance()
        }
        if let parent { declarations[parent].properties += properties }
    }

    /// Skips a default value or raw value, and answers its tokens. The value ends at
    /// a `,`, `;` or closer outside any group, or at a line break not followed by
    /// something that continues it (`.member`, an operator).
    private mutating func skipExpression() throws(SwiftSchemaError) -> Range<Int> {
        let start = index
        while current.kind != .end {
            if index > start, current.followsNewline, !continuesExpression(current) { break }
            if [",", ";", "}", ")", "]"].contains(where: current.isMark) { break }
            if atGroupOpener { try skipGroup() } else { advance() }
        }
        guard index > start else { throw syntax("expected a value after '='", line: current.line) }
        return start..<index
    }

    private func continuesExpression(_ token: SwiftToken) -> Bool {
        if token.kind == .punctuation {
            return ["->", "...", "..<"].contains(token.text) || ".+-*/%=!?:&|^<>~".contains(token.text)
        }
        return token.isWord("as") || token.isWord("is")
    }

    /// The type a default value spells out: a literal, or a call `TypeName(…)`.
    private func inferredType(of range: Range<Int>) -> SwiftTypeRef? {
        var slice = tokens[range]
        if slice.count == 2, slice.first!.isMark("-"), slice.last!.kind == .number { slice.removeFirst() }
        if slice.count == 1 {
            let token = slice.first!
            switch token.kind {
            case .number:
                let text = token.text.lowercased()
                let isFraction = text.hasPrefix("0x") ? text.contains(".") || text.contains("p")
                    : text.contains(".") || text.contains("e")
                return .named([SwiftTypeComponent(name: isFraction ? "Double" : "Int")])
            case .string:
                return .named([SwiftTypeComponent(name: "String")])
            case .identifier where token.isWord("true") || token.isWord("false"):
                return .named([SwiftTypeComponent(name: "Bool")])
            default:
                return nil
            }
        }
        // `Name(…)` or `Outer.Name(…)`, where the name is capitalised like a type's.
        var components: [SwiftTypeComponent] = []
        var position = range.lowerBound
        while position < range.upperBound, tokens[position].kind == .identifier {
            components.append(SwiftTypeComponent(name: tokens[position].text))
            position += 1
            guard position < range.upperBound, tokens[position].isMark(".") else { break }
            position += 1
        }
        guard let last = components.last, last.name.first?.isUppercase == true,
            position < range.upperBound, tokens[position].isMark("("),
            closingParenthesis(of: position) == range.upperBound - 1
        else { return nil }
        return .named(components)
    }

    private func closingParenthesis(of open: Int) -> Int? {
        var depth = 0
        for position in open..<tokens.count {
            if tokens[position].isMark("(") { depth += 1 }
            if tokens[position].isMark(")") {
                depth -= 1
                if depth == 0 { return position }
            }
        }
        return nil
    }

    private mutating func parseCases(in parent: Int?) throws(SwiftSchemaError) {
        let keyword = advance()
        guard let parent, declarations[parent].kind == .enumeration else { return }
        while true {
            guard current.kind == .identifier else {
                throw syntax("expected a case name after '\(keyword.text)'", line: current.line)
            }
            let name = advance()
            var enumCase = SwiftEnumCase(name: name.text, line: name.line)
            if current.isMark("(") {
                enumCase.hasAssociatedValues = true
                try skipGroup()
            }
            if current.isMark("=") {
                advance()
                let range = try skipExpression()
                let slice = Array(tokens[range])
                if slice.count == 1, slice[0].kind == .string, !slice[0].isInterpolated {
                    enumCase.rawValue = .string(slice[0].text)
                } else if slice.count == 1, slice[0].kind == .number {
                    enumCase.rawValue = .number(slice[0].text)
                } else if slice.count == 2, slice[0].isMark("-"), slice[1].kind == .number {
                    enumCase.rawValue = .number("-" + slice[1].text)
                } else {
                    enumCase.rawValue = .other(slice.map(\.text).joined(separator: " "))
                }
            }
            declarations[parent].cases.append(enumCase)
            guard current.isMark(",") else { return }
            advance()
        }
    }

    private mutating func parseTypeAlias(in parent: Int?) throws(SwiftSchemaError) {
        let keyword = advance()
        guard current.kind == .identifier else {
            throw syntax("expected a name after 'typealias'", line: current.line)
        }
        var declaration = SwiftDeclaration(kind: .typeAlias, name: advance().text, line: keyword.line, parent: parent)
        if current.isMark("<") { declaration.genericParameters = try parseGenericParameters() }
        try expect("=", after: "typealias \(declaration.name)")
        declaration.aliasTarget = try parseType()
        _ = register(declaration)
    }

    /// Skips a function, initializer, subscript, import, operator or the like: its
    /// signature and, when it has one, its body.
    private mutating func skipFunctionLike(in parent: Int?) throws(SwiftSchemaError) {
        let keyword = advance()
        if keyword.isWord("init"), let parent {
            var position = index
            while tokens[position].isMark("?") || tokens[position].isMark("!") { position += 1 }
            if tokens[position].isMark("("), tokens[position + 1].isWord("from"),
                let close = closingParenthesis(of: position),
                tokens[position..<close].contains(where: { $0.kind == .identifier && $0.text == "Decoder" })
            {
                declarations[parent].decodesItself = true
            }
        }
        while current.kind != .end {
            if current.isMark("{") {
                try skipGroup()
                return
            }
            if current.isMark("}") || current.isMark(";") { return }
            if current.followsNewline, startsDeclaration(current) { return }
            if keyword.isWord("import"), current.followsNewline { return }
            if atGroupOpener { try skipGroup() } else { advance() }
        }
    }

    // MARK: Types

    /// Reads one type: named (with generic arguments and dotted members), optional,
    /// array, dictionary, tuple, function, or something kept only as its spelling.
    private mutating func parseType() throws(SwiftSchemaError) -> SwiftTypeRef {
        while current.isMark("@") {
            advance()
            if current.kind == .identifier { advance() }
            if current.isMark("("), !current.followsSpace { try skipGroup() }
        }
        let specifiers: Set<String> = ["inout", "borrowing", "consuming", "sending", "__owned", "__shared", "isolated"]
        while current.kind == .identifier, !current.isEscaped, specifiers.contains(current.text),
            token(at: 1).kind == .identifier || token(at: 1).isMark("(") || token(at: 1).isMark("[")
        {
            advance()
        }
        if current.isWord("some") || current.isWord("any") || current.isWord("each") || current.isWord("repeat") {
            let word = advance().text
            return .other("\(word) \(try parseType())")
        }
        var type = try parsePrimaryType()
        postfix: while true {
            if (current.isMark("?") || current.isMark("!")), !current.followsNewline {
                advance()
                type = .optional(type)
            } else if current.isMark("."), token(at: 1).isWord("Type") || token(at: 1).isWord("Protocol") {
                advance()
                type = .other("\(type).\(advance().text)")
            } else if current.isMark("...") {
                advance()
                type = .other("\(type)...")
            } else {
                break postfix
            }
        }
        if current.isMark("&") {
            var parts = [type.description]
            while current.isMark("&") {
                advance()
                parts.append(try parsePrimaryType().description)
            }
            type = .other(parts.joined(separator: " & "))
        }
        return type
    }

    private mutating func parsePrimaryType() throws(SwiftSchemaError) -> SwiftTypeRef {
        let start = current
        if start.isMark("[") {
            advance()
            let first = try parseType()
            if current.isMark(":") {
                advance()
                let value = try parseType()
                try expect("]", after: "dictionary type")
                return .dictionary(key: first, value: value)
            }
            try expect("]", after: "array type")
            return .array(first)
        }
        if start.isMark("(") {
            advance()
            var elements: [SwiftTypeRef] = []
            while !current.isMark(")") {
                // Labels: `name:` or `_ name:`.
                if current.kind == .identifier, token(at: 1).isMark(":") {
                    advance()
                    advance()
                } else if current.kind == .identifier, token(at: 1).kind == .identifier, token(at: 2).isMark(":") {
                    advance()
                    advance()
                    advance()
                }
                elements.append(try parseType())
                guard current.isMark(",") else { break }
                advance()
            }
            try expect(")", after: "tuple type")
            if current.isWord("async") || current.isWord("throws") || current.isWord("rethrows") || current.isMark("->") {
                var effects = ""
                while current.isWord("async") || current.isWord("throws") || current.isWord("rethrows") {
                    effects += " " + advance().text
                    if current.isMark("("), !current.followsSpace { try skipGroup() }
                }
                try expect("->", after: "function type parameters")
                let result = try parseType()
                let parameters = elements.map(\.description).joined(separator: ", ")
                return .function("(\(parameters))\(effects) -> \(result)")
            }
            return elements.count == 1 ? elements[0] : .tuple(elements)
        }
        guard start.kind == .identifier else {
            throw syntax(start.kind == .end ? "expected a type" : "expected a type, found '\(start.text)'",
                line: start.line)
        }
        var components: [SwiftTypeComponent] = []
        while true {
            var component = SwiftTypeComponent(name: advance().text)
            if current.isMark("<") {
                advance()
                while true {
                    component.arguments.append(try parseType())
                    guard current.isMark(",") else { break }
                    advance()
                }
                try expect(">", after: "generic arguments of \(component.name)")
            }
            components.append(component)
            let next = token(at: 1)
            guard current.isMark("."), next.kind == .identifier, !next.isWord("Type"), !next.isWord("Protocol")
            else { break }
            advance()
        }
        return .named(components)
    }

    // MARK: Extensions

    /// Moves each extension's nested types and conformances onto the type it extends,
    /// when that type is declared in the file.
    private mutating func mergeExtensions() {
        var pending = declarations.indices.filter { declarations[$0].kind == .extensionBlock }
        var progressed = true
        while progressed, !pending.isEmpty {
            progressed = false
            pending.removeAll { position in
                guard let target = resolvePath(declarations[position].extendedPath) else { return false }
                let members = declarations[position].memberTypes
                declarations[target].memberTypes += members
                for member in members { declarations[member].parent = target }
                declarations[position].memberTypes = []
                declarations[target].inheritance += declarations[position].inheritance
                declarations[target].decodesItself = declarations[target].decodesItself
                    || declarations[position].decodesItself
                progressed = true
                return true
            }
        }
    }

    private func resolvePath(_ path: [String]) -> Int? {
        guard !path.isEmpty else { return nil }
        var scope = topLevel
        var found: Int?
        for name in path {
            guard let hit = scope.first(where: { declarations[$0].kind != .extensionBlock && declarations[$0].name == name })
            else { return nil }
            found = hit
            scope = declarations[hit].memberTypes
        }
        return found
    }
}
