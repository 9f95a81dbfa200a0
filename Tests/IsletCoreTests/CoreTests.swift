import Foundation
import IsletCore
import Testing

@Suite("Redaction")
struct RedactionTests {
    @Test func keepsOnlyAPrefixAndTheLength() {
        let token = String(repeating: "ab12", count: 16)
        let redacted = Redaction.redact(token)
        #expect(redacted == "ab12ab…(64)")
        #expect(!redacted.contains(token))
    }

    @Test func shortSecretsShowNothing() {
        #expect(Redaction.redact("secret") == "…(6)")
        #expect(Redaction.redact("") == "…(0)")
    }
}

@Suite("JSON text")
struct JSONTextTests {
    @Test func escapesSoThatJSONParsesBack() throws {
        let nasty = "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} emoji 🛵 é"
        let json = "[\(JSONText.quoted(nasty))]"
        let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String]
        #expect(parsed == [nasty])
        #expect(JSONText.quoted("\u{1F}") == "\"\\u001f\"")
    }

    /// The byte writer escapes as the scalar-by-scalar definition does, for strings
    /// drawn from every class of character: plain runs, the escaped few, controls,
    /// and two-, three- and four-byte scalars.
    @Test func byteWriterMatchesTheScalarDefinition() throws {
        let alphabet: [Unicode.Scalar] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{1F}",
            "\u{7F}", "\u{E9}", "\u{301}", "\u{2028}", "\u{FFFD}", "\u{1F6F5}"]
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var text = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...24, using: &random) { text.append(alphabet.randomElement(using: &random)!) }
            let value = String(text)
            #expect(JSONText.quoted(value) == Self.scalarQuoted(value))
            let parsed = try JSONSerialization.jsonObject(with: Data("[\(JSONText.quoted(value))]".utf8)) as? [String]
            #expect(parsed == [value])
        }
    }

    /// RFC 8259's escaping, one scalar at a time: the definition the writer keeps.
    static func scalarQuoted(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Members print in the order of their keys' scalars, whatever scalars they hold.
    @Test func membersPrintInScalarOrder() throws {
        let keys = ["b", "a", "\u{E9}", "e\u{301}x", "\u{1F6F5}", "Z", "\u{FFFD}", "aa", ""]
        let object = JSONValue.object(Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, .integer(Int64($0))) }))
        let expected = keys.sorted { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }
        let text = object.jsonText
        let positions = try expected.map { key in
            try #require(text.range(of: JSONText.quoted(key) + ":")).lowerBound
        }
        #expect(positions == positions.sorted())
        #expect(keys.sortedByScalars() == expected)
    }
}

@Suite("Clocks")
struct ClockTests {
    @Test func manualClockMovesOnlyWhenTold() {
        let clock = ManualWallClock(start: Date(timeIntervalSince1970: 1_000))
        #expect(clock.now() == Date(timeIntervalSince1970: 1_000))
        clock.advance(by: 8 * 3600)
        #expect(clock.now() == Date(timeIntervalSince1970: 1_000 + 8 * 3600))
        clock.set(Date(timeIntervalSince1970: 5))
        #expect(clock.now().timeIntervalSince1970 == 5)
    }

    @Test func systemClockIsNow() {
        #expect(abs(SystemWallClock().now().timeIntervalSinceNow) < 5)
    }
}
