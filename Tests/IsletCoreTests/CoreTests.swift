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
