public import Foundation
// The header fields are the shared model of every transport (`HTTPTypes`).
@_exported public import HTTPTypes

/// An HTTP/2 request from a client's point of view.
public struct HTTP2Request: Sendable {
    /// `:method`.
    public var method: String
    /// `:path`, with any query.
    public var path: String
    /// Regular header fields (lowercase names; HTTP/2 requires it).
    public var headers: HTTPHeaders
    /// The body; empty means none.
    public var body: Data

    /// Creates a request.
    public init(method: String = "POST", path: String, headers: HTTPHeaders = [], body: Data = Data()) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// Creates a request with the fields `headers` (the array is kept as it is).
    public init(method: String = "POST", path: String, headers: [(name: String, value: String)], body: Data = Data()) {
        self.init(method: method, path: path, headers: HTTPHeaders(headers), body: body)
    }
}

/// An HTTP/2 response.
public struct HTTP2Response: Sendable {
    /// `:status`.
    public var status: Int
    /// Regular header fields, lowercase names.
    public var headers: HTTPHeaders
    /// The body.
    public var body: Data

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Creates a response with the fields `headers` (the array is kept as it is).
    public init(status: Int, headers: [(name: String, value: String)], body: Data = Data()) {
        self.init(status: status, headers: HTTPHeaders(headers), body: body)
    }

    /// The first value of header `name`.
    public func header(_ name: String) -> String? {
        headers[name]
    }
}

/// A request as a server received it.
public struct HTTP2ServerRequest: Sendable {
    /// `:method`.
    public var method: String
    /// `:path`.
    public var path: String
    /// `:authority`, when sent.
    public var authority: String?
    /// Regular header fields in arrival order, as received.
    public var fields: HTTP2HeaderFields
    /// The body.
    public var body: Data
    /// The stream's id on its connection.
    public var streamID: Int32

    /// Creates a request (a server makes these as requests arrive).
    public init(
        method: String, path: String, authority: String? = nil, fields: HTTP2HeaderFields, body: Data, streamID: Int32
    ) {
        self.method = method
        self.path = path
        self.authority = authority
        self.fields = fields
        self.body = body
        self.streamID = streamID
    }

    /// Regular header fields in arrival order, lowercase names, as text.
    public var headers: [(name: String, value: String)] { fields.pairs }

    /// The first value of header `name` (lowercase).
    public func header(_ name: String) -> String? {
        fields.first(name)
    }
}
