import Foundation
import HTTPServer
import IsletCore

/// JSON for responses: dates as RFC 3339 with milliseconds.
enum APIJSON {
    static func date(_ date: Date?) -> JSONValue {
        guard let date else { return .null }
        return .string(rfc3339(date))
    }

    /// `2026-11-29T23:08:48.893Z`.
    static func rfc3339(_ date: Date) -> String { RFC3339.string(date) }

    static func response(status: Int = 200, _ value: JSONValue) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: Data(value.jsonText.utf8))
    }

    static func optional(_ text: String?) -> JSONValue { text.map(JSONValue.string) ?? .null }
}
