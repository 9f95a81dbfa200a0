public import Foundation
public import HTTP2
public import IsletCore

/// One connection of the transport, as the engine knows it: provider token rules
/// apply per connection.
public struct ConnectionID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The transport's number for the connection.
    public let rawValue: UInt64

    /// Names connection `rawValue`.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// The number.
    public var description: String { String(rawValue) }

    /// Reads the number.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt64.self)
    }

    /// Writes the number.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// One HTTP/2 request as the transport hands it to the engine.
public struct SimulatorRequest: Sendable {
    /// The `:method` pseudo-header.
    public var method: String
    /// The `:path` pseudo-header.
    public var path: String
    /// The regular header fields, in arrival order, names lowercase (as HTTP/2 sends
    /// them), pseudo-headers removed. A name may repeat.
    public var fields: HTTP2HeaderFields
    /// The request body.
    public var body: Data

    /// Creates a request.
    public init(method: String = "POST", path: String, headers: [(name: String, value: String)], body: Data) {
        self.init(method: method, path: path, fields: HTTP2HeaderFields(headers), body: body)
    }

    /// Creates a request from fields as received.
    public init(method: String = "POST", path: String, fields: HTTP2HeaderFields, body: Data) {
        self.method = method
        self.path = path
        self.fields = fields
        self.body = body
    }

    /// The regular header fields as text.
    public var headers: [(name: String, value: String)] { fields.pairs }
}

/// What the transport sends back for one request.
public struct SimulatorResponse: Sendable {
    /// The `:status`.
    public let status: Int
    /// The header fields: always `apns-id`; `apns-unique-id` for accepted pushes in
    /// the sandbox; `content-type` when there is a body.
    public let headers: [(name: String, value: String)]
    /// Empty for 200, otherwise `{"reason":"…"}`, with `"timestamp"` (milliseconds
    /// since 1970) for 410.
    public let body: Data
    /// The reason in the body, for callers that would rather not parse it.
    public let reason: APNsReason?
    /// The number of the push record that holds this exchange.
    public let sequence: Int

    /// Creates a response; the engine makes these, and a transport may make its own
    /// (for a request it refuses before the engine sees it).
    public init(status: Int, headers: [(name: String, value: String)], body: Data, reason: APNsReason?, sequence: Int) {
        self.status = status
        self.headers = headers
        self.body = body
        self.reason = reason
        self.sequence = sequence
    }

    /// The value of the header `name`, if present.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}
