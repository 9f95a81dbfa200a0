public import Foundation

/// Request or response header fields. Names keep the case they were given in and are
/// compared case-insensitively; order and repeats are kept.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    private var fields: [(name: String, value: String)] = []

    /// Creates empty headers.
    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name, value) }
    }

    /// Appends a field.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every field named `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        fields.removeAll { HTTPHeaders.sameName($0.name, name) }
        fields.append((name, value))
    }

    /// Every value of `name`, in order.
    public func values(of name: String) -> [String] {
        fields.filter { HTTPHeaders.sameName($0.name, name) }.map(\.value)
    }

    /// The first value of `name`, if any.
    public subscript(name: String) -> String? {
        fields.first { HTTPHeaders.sameName($0.name, name) }?.value
    }

    /// Whether two field names are equal ignoring ASCII case, without allocating.
    static func sameName(_ a: String, _ b: String) -> Bool {
        var a = a.utf8.makeIterator()
        var b = b.utf8.makeIterator()
        while true {
            switch (a.next(), b.next()) {
            case (nil, nil): return true
            case (let x?, let y?):
                if x == y { continue }
                let lowerX = (0x41...0x5A).contains(x) ? x | 0x20 : x
                let lowerY = (0x41...0x5A).contains(y) ? y | 0x20 : y
                if lowerX != lowerY { return false }
            default: return false
            }
        }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}

/// A complete HTTP request, body included.
public struct HTTPRequest: Sendable {
    /// The method, upper case (`GET`, `PUT`, …).
    public var method: String
    /// The path, without the query string, percent-decoded.
    public var path: String
    /// Query parameters in order, decoded.
    public var query: [(name: String, value: String)]
    /// Header fields.
    public var headers: HTTPHeaders
    /// The body (empty when there was none).
    public var body: Data
    /// The peer's address, as `ip:port`, when known.
    public var remoteAddress: String?
    /// The peer's IP address alone (no port), when known.
    public var remoteHost: String?

    /// Creates a request.
    public init(
        method: String, path: String, query: [(name: String, value: String)] = [],
        headers: HTTPHeaders = HTTPHeaders(), body: Data = Data(), remoteAddress: String? = nil,
        remoteHost: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.remoteHost = remoteHost
    }

    /// The first value of query parameter `name`, if any.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }
}

/// An HTTP response: a complete body, or one streamed (`stream`).
public struct HTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields. `Content-Length` and `Date` are added by the server.
    public var headers: HTTPHeaders
    /// The body (empty for a streamed response).
    public var body: Data
    /// What writes a streamed body, nil for a complete one.
    var producer: (@Sendable (HTTPBodyWriter) async -> Void)?

    /// Whether the body is streamed (made by `stream`) rather than `body`.
    public var isStreamed: Bool { producer != nil }

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with a body of `contentType`.
    public init(status: Int, contentType: String, body: Data) {
        self.init(status: status, headers: ["Content-Type": contentType], body: body)
    }

    /// A response whose body `body` writes over time, for Server-Sent Events and the
    /// like. The status and headers go out at once, the body chunked (no
    /// `Content-Length`; caching headers such as `Cache-Control: no-cache` are the
    /// caller's), each write as soon as the connection takes it. `body` runs in a
    /// task of its own once the headers are queued; the response ends when it
    /// returns. It should return soon after its writer closes (`write` answers false,
    /// `closed(within:)` true): when the client goes, the server shuts down, or the
    /// client falls more than `HTTPServerConfiguration.streamBufferBytes` behind.
    /// A HEAD request gets the status and headers, and `body` is not run.
    public static func stream(
        status: Int = 200, headers: HTTPHeaders = HTTPHeaders(),
        _ body: @escaping @Sendable (HTTPBodyWriter) async -> Void
    ) -> HTTPResponse {
        var response = HTTPResponse(status: status, headers: headers)
        response.producer = body
        return response
    }
}

extension HTTPResponse {
    /// The standard reason phrase of an HTTP status (RFC 9110), as a problem
    /// document's `title` carries it.
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 410: "Gone"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "HTTP \(status)"
        }
    }
}
