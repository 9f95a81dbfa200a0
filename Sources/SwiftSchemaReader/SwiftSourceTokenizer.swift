/// One token of Swift source, as ``SwiftSchemaReader`` needs it: comments are gone,
/// string literals are one token each (so braces inside them never count), and each
/// token knows whether a line break or a space came before it.
struct SwiftToken: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        case identifier, number, string, punctuation, end
    }

    let kind: Kind
    /// The identifier (without backticks), the number as written, the string's
    /// value (escapes decoded), or the punctuation.
    let text: String
    /// An identifier written in backticks, which is never a keyword.
    var isEscaped = false
    /// A string literal with `\(…)` interpolation, whose value is not known.
    var isInterpolated = false
    let line: Int
    let followsNewline: Bool
    let followsSpace: Bool

    /// Whether this is the bare identifier `word` (a keyword or contextual keyword).
    func isWord(_ word: String) -> Bool { kind == .identifier && !isEscaped && text == word }

    /// Whether this is the punctuation `mark`.
    func isMark(_ mark: String) -> Bool { kind == .punctuation && text == mark }
}

/// Splits Swift source into ``SwiftToken``s.
///
/// It knows comments (nested block comments included), string literals in every
/// form (`"…"`, `"""…"""`, raw `#"…"#`, with interpolations that hold strings of
/// their own), backticked identifiers and numbers. `#if`, `#elseif` (with their
/// conditions), `#else` and `#endif` are dropped, so both branches are read.
struct SwiftSourceTokenizer {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var line = 1
    private var sawNewline = true
    private var sawSpace = true
    private var tokens: [SwiftToken] = []

    private init(_ source: String) {
        scalars = Array(source.unicodeScalars)
    }

    /// The tokens of `source`, ending with one `.end` token.
    static func tokenize(_ source: String) throws(SwiftSchemaError) -> [SwiftToken] {
        var tokenizer = SwiftSourceTokenizer(source)
        try tokenizer.run()
        return tokenizer.tokens
    }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }

    private func syntax(_ message: String, line: Int) -> SwiftSchemaError {
        SwiftSchemaError(.syntax, problems: ["line \(line): \(message)"])
    }

    private mutating func emit(_ kind: SwiftToken.Kind, _ text: String, line: Int, escaped: Bool = false,
                               interpolated: Bool = false) {
        var token = SwiftToken(kind: kind, text: text, line: line, followsNewline: sawNewline, followsSpace: sawSpace)
        token.isEscaped = escaped
        token.isInterpolated = interpolated
        tokens.append(token)
        sawNewline = false
        sawSpace = false
    }

    private mutating func run() throws(SwiftSchemaError) {
        while let scalar = peek() {
            if scalar == "\n" {
                line += 1
                sawNewline = true
                sawSpace = true
                index += 1
                continue
            }
            if Self.isSpace(scalar) {
                sawSpace = true
                index += 1
                continue
            }
            if scalar == "/", peek(1) == "/" {
                while let next = peek(), next != "\n" { index += 1 }
                sawSpace = true
                continue
            }
            if scalar == "/", peek(1) == "*" {
                try skipBlockComment()
                sawSpace = true
                continue
            }
            let startLine = line
            if scalar == "#" {
                var hashes = 0
                while peek(hashes) == "#" { hashes += 1 }
                if peek(hashes) == "\"" {
                    index += hashes
                    let (value, interpolated) = try readString(hashes: hashes)
                    emit(.string, value, line: startLine, interpolated: interpolated)
                    continue
                }
                if let next = peek(1), Self.isIdentifierStart(next) {
                    var end = index + 1
                    while end < scalars.count, Self.isIdentifierPart(scalars[end]) { end += 1 }
                    let word = String(String.UnicodeScalarView(scalars[(index + 1)..<end]))
                    if word == "if" || word == "elseif" {
                        // The condition is not evaluated: both branches are read.
                        while let next = peek(), next != "\n" { index += 1 }
                        continue
                    }
                    if word == "else" || word == "endif" {
                        index = end
                        continue
                    }
                }
                index += 1
                emit(.punctuation, "#", line: startLine)
                continue
            }
            if scalar == "\"" {
                let (value, interpolated) = try readString(hashes: 0)
                emit(.string, value, line: startLine, interpolated: interpolated)
                continue
            }
            if scalar == "`" {
                index += 1
                let start = index
                while let next = peek(), next != "`" {
                    guard next != "\n" else { throw syntax("unterminated backticked identifier", line: startLine) }
                    index += 1
                }
                guard peek() == "`" else { throw syntax("unterminated backticked identifier", line: startLine) }
                let name = String(String.UnicodeScalarView(scalars[start..<index]))
                index += 1
                emit(.identifier, name, line: startLine, escaped: true)
                continue
            }
            if Self.isIdentifierStart(scalar) || (scalar == "$" && peek(1).map(Self.isIdentifierPart) == true) {
                let start = index
                index += 1
                while let next = peek(), Self.isIdentifierPart(next) { index += 1 }
                emit(.identifier, String(String.UnicodeScalarView(scalars[start..<index])), line: startLine)
                continue
            }
            if Self.isDigit(scalar) {
                emit(.number, readNumber(), line: startLine)
                continue
            }
            if let mark = ["->", "...", "..<"].first(where: matches) {
                index += mark.unicodeScalars.count
                emit(.punctuation, mark, line: startLine)
                continue
            }
            index += 1
            emit(.punctuation, String(scalar), line: startLine)
        }
        tokens.append(SwiftToken(kind: .end, text: "", line: line, followsNewline: true, followsSpace: true))
    }

    private func matches(_ mark: String) -> Bool {
        for (offset, scalar) in mark.unicodeScalars.enumerated() where peek(offset) != scalar { return false }
        return true
    }

    private mutating func skipBlockComment() throws(SwiftSchemaError) {
        let startLine = line
        var depth = 0
        repeat {
            guard let scalar = peek() else { throw syntax("unterminated comment", line: startLine) }
            if scalar == "/", peek(1) == "*" {
                depth += 1
                index += 2
            } else if scalar == "*", peek(1) == "/" {
                depth -= 1
                index += 2
            } else {
                if scalar == "\n" { line += 1 }
                index += 1
            }
        } while depth > 0
    }

    private mutating func readNumber() -> String {
        let start = index
        let isHex = peek() == "0" && (peek(1) == "x" || peek(1) == "X")
        var sawDot = false
        while let scalar = peek() {
            if Self.isIdentifierPart(scalar) && scalar.value < 0x80 {
                index += 1
            } else if scalar == ".", !sawDot, let next = peek(1), Self.isDigit(next) || (isHex && next.properties.isASCIIHexDigit) {
                sawDot = true
                index += 1
            } else if scalar == "+" || scalar == "-", index > start,
                isHex ? (scalars[index - 1] == "p" || scalars[index - 1] == "P")
                    : (scalars[index - 1] == "e" || scalars[index - 1] == "E")
            {
                index += 1
            } else {
                break
            }
        }
        return String(String.UnicodeScalarView(scalars[start..<index]))
    }

    /// Reads a string literal whose opening quote is at `index` (after any `#`s) and
    /// answers its value and whether it interpolates.
    private mutating func readString(hashes: Int) throws(SwiftSchemaError) -> (String, Bool) {
        let startLine = line
        let multiline = matches("\"\"\"")
        index += multiline ? 3 : 1
        var value = String.UnicodeScalarView()
        var interpolated = false
        while true {
            guard let scalar = peek() else { throw syntax("unterminated string literal", line: startLine) }
            if scalar == "\n" {
                guard multiline else { throw syntax("unterminated string literal", line: startLine) }
                line += 1
            }
            if scalar == "\"", multiline ? matches("\"\"\"") : true {
                let quotes = multiline ? 3 : 1
                if (0..<hashes).allSatisfy({ peek(quotes + $0) == "#" }) {
                    index += quotes + hashes
                    break
                }
            }
            if scalar == "\\", (0..<hashes).allSatisfy({ peek(1 + $0) == "#" }) {
                let escapeLine = line
                index += 1 + hashes
                guard let letter = peek() else { throw syntax("unterminated string literal", line: startLine) }
                index += 1
                switch letter {
                case "(":
                    interpolated = true
                    try skipInterpolation(startLine: escapeLine)
                case "n": value.append("\n")
                case "t": value.append("\t")
                case "r": value.append("\r")
                case "0": value.append("\0")
                case "\\", "\"", "'": value.append(letter)
                case "u":
                    guard peek() == "{" else { throw syntax("invalid \\u escape in string literal", line: escapeLine) }
                    index += 1
                    var code: UInt32 = 0
                    var digits = 0
                    while let digit = peek(), let nibble = Self.hexValue(digit) {
                        code = code &* 16 &+ nibble
                        digits += 1
                        index += 1
                    }
                    guard peek() == "}", (1...8).contains(digits), let decoded = Unicode.Scalar(code) else {
                        throw syntax("invalid \\u escape in string literal", line: escapeLine)
                    }
                    index += 1
                    value.append(decoded)
                case " ", "\t", "\n":
                    // A line continuation: the backslash, trailing blanks and the break vanish.
                    guard multiline else { throw syntax("invalid escape in string literal", line: escapeLine) }
                    index -= 1
                    while let blank = peek(), blank == " " || blank == "\t" { index += 1 }
                    guard peek() == "\n" else { throw syntax("invalid escape in string literal", line: escapeLine) }
                    index += 1
                    line += 1
                default:
                    throw syntax("invalid escape \\\(letter) in string literal", line: escapeLine)
                }
                continue
            }
            value.append(scalar)
            index += 1
        }
        guard multiline else { return (String(value), interpolated) }
        return (Self.strippingIndentation(String(value)), interpolated)
    }

    /// Skips the inside of `\(…)` up to its closing parenthesis, strings included.
    private mutating func skipInterpolation(startLine: Int) throws(SwiftSchemaError) {
        var depth = 1
        while let scalar = peek() {
            switch scalar {
            case "(":
                depth += 1
                index += 1
            case ")":
                depth -= 1
                index += 1
                if depth == 0 { return }
            case "\"":
                _ = try readString(hashes: 0)
            case "#":
                var hashes = 0
                while peek(hashes) == "#" { hashes += 1 }
                if peek(hashes) == "\"" {
                    index += hashes
                    _ = try readString(hashes: hashes)
                } else {
                    index += hashes
                }
            case "\n":
                line += 1
                index += 1
            default:
                index += 1
            }
        }
        throw syntax("unterminated interpolation in string literal", line: startLine)
    }

    /// A multi-line string's value: the lines between the delimiters, less the closing
    /// delimiter's indentation.
    private static func strippingIndentation(_ raw: String) -> String {
        var lines = raw.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count >= 2 else { return raw }
        lines.removeFirst()
        let indentation = lines.removeLast()
        return lines.map { $0.hasPrefix(indentation) ? String($0.dropFirst(indentation.count)) : $0 }
            .joined(separator: "\n")
    }

    private static func hexValue(_ scalar: Unicode.Scalar) -> UInt32? {
        switch scalar {
        case "0"..."9": scalar.value - 0x30
        case "a"..."f": scalar.value - 0x61 + 10
        case "A"..."F": scalar.value - 0x41 + 10
        default: nil
        }
    }

    private static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case " ", "\t", "\r", "\u{0B}", "\u{0C}", "\0": true
        default: scalar.value >= 0x80 && scalar.properties.isWhitespace
        }
    }

    private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }

    private static func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "_": true
        default: scalar.value >= 0x80 && !scalar.properties.isWhitespace
        }
    }

    private static func isIdentifierPart(_ scalar: Unicode.Scalar) -> Bool {
        isIdentifierStart(scalar) || isDigit(scalar)
    }
}
