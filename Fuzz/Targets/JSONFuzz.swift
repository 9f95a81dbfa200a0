import Foundation
import IsletCore

/// `JSONValue(parsing:)` on any bytes. A value it accepts must survive a round trip:
/// its `jsonText` parses back to an equal value, which prints the same text again.
public enum JSONFuzz {
    public static func run(_ bytes: UnsafeRawBufferPointer) {
        let data = Data(bytes)
        // A shallow limit too, so that the depth check is reached by small inputs.
        _ = try? JSONValue(parsing: data, maximumDepth: 3)
        guard let value = try? JSONValue(parsing: data) else { return }
        let text = value.jsonText
        let again: JSONValue
        do {
            again = try JSONValue(parsing: Data(text.utf8))
        } catch {
            fatalError("the text \(text) printed from a parsed value does not parse: \(error)")
        }
        guard again == value else { fatalError("round trip changed the value: \(value) became \(again)") }
        guard again.jsonText == text else { fatalError("round trip changed the text: \(text) became \(again.jsonText)") }
    }
}
