public import Foundation
public import HTTPClient

/// The token exchange over the outbound HTTP client (libcurl: HTTP/1.1 or HTTP/2,
/// whichever the endpoint speaks). The client is shut down by whoever made it.
public struct CurlTokenExchange: FCMTokenExchange {
    private let client: HTTPClient

    /// An exchange through `client`.
    public init(client: HTTPClient) {
        self.client = client
    }

    public func post(url: String, form: String) async -> Result<(status: Int, body: Data), FCMTokenError> {
        let request = OutboundRequest(
            url: url, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Data(form.utf8))
        switch await client.send(request) {
        case .success(let response):
            return .success((response.status, response.body))
        case .failure(let failure):
            return .failure(FCMTokenError(status: nil, error: nil, message: "the token endpoint could not be reached: \(failure)"))
        }
    }
}
