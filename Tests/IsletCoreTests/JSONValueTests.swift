import Foundation
import IsletCore
import Testing

@Suite("JSON values")
struct JSONValueTests {
    func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try JSONValue(parsing: Data(text.utf8))
    }

    func failure(_ text: String) -> JSONParseError.Code? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func parsesAPayload() throws {
        let value = try parse(#"""
            {"aps": {"timestamp": 1800000000, "event": "update", "relevance-score": 0.5,
              "content-state": {"eta": "12:30", "done": false, "stops": [1, 2.5, null]}}}
            """#)
        let aps = try #require(value["aps"])
        #expect(aps["timestamp"] == .integer(1_800_000_000))
        #expect(aps["relevance-score"] == .double(0.5))
        #expect(aps["event"]?.stringValue == "update")
        #expect(aps["content-state"]?["stops"] == [1, 2.5, nil])
        #expect(aps["content-state"]?["done"]?.boolValue == false)
        #expect(aps["missing"] == nil)
    }

    @Test func numbers() throws {
        #expect(try parse("0") == .integer(0))
        #expect(try parse("-12") == .integer(-12))
        #expect(try parse("1e3") == .double(1000))
        #expect(try parse("9223372036854775807") == .integer(.max))
        #expect(try parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try parse("5.0").int64Value == 5)
        #expect(try parse("5.5").int64Value == nil)
        for bad in ["01", "1.", ".5", "-", "+1", "1e", "1e999", "NaN", "Infinity"] {
            #expect(failure(bad) != nil, "\(bad)")
        }
    }

    @Test func strings() throws {
        #expect(try parse(#""a\"b\\c\/d\n\t\u00e9\ud83d\udef5""#) == .string("a\"b\\c/d\n\té🛵"))
        #expect(try parse("\"🛵 é\"") == .string("🛵 é"))
        #expect(failure("\"a\u{01}b\"") == .invalidString)
        #expect(failure(#""\ud83d""#) == .invalidString)
        #expect(failure(#""\udef5""#) == .invalidString)
        #expect(failure(#""\x""#) == .invalidString)
        #expect(failure("\"abc") == .unexpectedEnd)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: Data([0x22, 0xFF, 0x22])) }
    }

    @Test func membersPrintInOneOrderWhateverTheyWereReadIn() throws {
        // "e" + combining acute and "é=" are neither below the other by String's own
        // `<`: sorted with it, the two keys came out in the order they went in, so a
        // value and its own round trip printed different texts.
        let decomposed = try parse(#"{"e\u0301":1,"\u00e9=":2}"#)
        let composed = try parse(#"{"\u00e9=":2,"e\u0301":1}"#)
        #expect(decomposed == composed)
        #expect(decomposed.jsonText == composed.jsonText)
        #expect(try parse(decomposed.jsonText).jsonText == decomposed.jsonText)
        #expect(decomposed.jsonText == "{\"e\u{301}\":1,\"\u{e9}=\":2}")
    }

    @Test func aRepeatedKeyIsRefusedAndNamed() throws {
        // Two readers of {"a":1,"a":2} can each take a different value.
        let plain = #expect(throws: JSONParseError.self) { try parse(#"{"name":"x","other":{"a":1,"a":2}}"#) }
        #expect(plain?.code == .duplicateKey)
        #expect(plain?.key == "a")
        #expect(plain?.offset == 27)
        #expect(plain?.description == #"the key "a" appears twice in one object (at byte 27)"#)
        // Swift's String compares keys by canonical equivalence: "e" + combining acute
        // and "é" would land in one slot of the dictionary, so they are one key, and
        // the message shows both spellings.
        let equivalent = #expect(throws: JSONParseError.self) { try parse(#"{"e\u0301":1,"\u00e9":2}"#) }
        #expect(equivalent?.code == .duplicateKey)
        #expect(equivalent?.key == "\u{e9}")
        #expect(equivalent?.firstSpelling == "e\u{301}")
        #expect(equivalent?.description.contains(#""\u00e9""#) == true)
        #expect(equivalent?.description.contains(#""e\u0301""#) == true)
        #expect(equivalent?.description.contains("canonically equivalent") == true)
        // Read as APNs may read it (the simulator does), the last value wins.
        #expect(try JSONValue(parsing: Data(#"{"a":1,"a":2}"#.utf8), repeatedKeys: .lastWins)["a"] == .integer(2))
        // The same key in two different objects is no repeat.
        #expect(try parse(#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#)["a"]?["a"] == .integer(1))
    }

    @Test func structureErrors() {
        #expect(failure("") == .unexpectedEnd)
        #expect(failure("{} x") == .trailingData)
        #expect(failure("{\"a\" 1}") == .unexpectedCharacter)
        #expect(failure("{\"a\":1,}") == .unexpectedCharacter)
        #expect(failure("[1,]") == .unexpectedCharacter)
        #expect(failure("tru") == .unexpectedEnd)
        #expect(failure("nul!") == .unexpectedCharacter)
        #expect(failure(String(repeating: "[", count: 65) + String(repeating: "]", count: 65)) == .tooDeep)
        #expect(failure(String(repeating: "[", count: 64) + String(repeating: "]", count: 64)) == nil)
    }

    @Test func textIsSortedAndParsesBack() throws {
        let value: JSONValue = ["b": [1, "x"], "a": ["z": true, "y": nil], "c": 0.25]
        #expect(value.jsonText == #"{"a":{"y":null,"z":true},"b":[1,"x"],"c":0.25}"#)
        #expect(try parse(value.jsonText) == value)
    }

    @Test func codableRoundTrip() throws {
        let value: JSONValue = ["n": 1_800_000_000, "f": 1.5, "s": "t", "b": false, "null": nil, "a": [[:], []]]
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
        #expect(try JSONValue(parsing: data) == value)
    }
}
