public import Foundation
// The header fields are the shared model of every transport.
@_exported public import HTTPTypes

/// One outbound HTTP request: a POST of `body` when it has one, otherwise a GET.
public struct OutboundRequest: Sendable {
    /// The absolute `http` or `https` URL. Other schemes are refused.
    public var url: String
    /// Header fields sent as given, in order. `Content-Type` is sent only when given
    /// here; `Expect: 100-continue` never is.
    public var headers: HTTPHeaders
    /// The body of a POST; empty for a GET.
    public var body: Data
    /// The most the whole request may take, connecting included.
    public var timeout: Duration

    /// Creates a request; a 10-second timeout unless given.
    public init(
        url: String, headers: HTTPHeaders = [], body: Data = Data(), timeout: Duration = .seconds(10)
    ) {
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}
