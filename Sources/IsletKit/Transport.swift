public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// One HTTP exchange with the server. `URLSessionTransport` is the real one; an
/// app's tests may put their own in its place.
public protocol IsletTransport: Sendable {
    func send(_ request: URLRequest) async throws -> HTTPAnswer
}

public struct HTTPAnswer: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A header's value, whatever the case of its name.
    public func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// Sends with a `URLSession` of its own (ephemeral: no cookies, no cache), each
/// request within `timeout`.
public final class URLSessionTransport: IsletTransport {
    let session: URLSession
    let timeout: TimeInterval

    public init(timeout: TimeInterval = 30) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        self.session = URLSession(configuration: configuration)
        self.timeout = timeout
    }

    deinit { session.invalidateAndCancel() }

    public func send(_ request: URLRequest) async throws -> HTTPAnswer {
        var request = request
        request.timeoutInterval = timeout
        return try await withCheckedThrowingContinuation { continuation in
            let task = session.dataTask(with: request) { data, response, error in
                if let error {
                    continuation.resume(throwing: error)
                } else if let response = response as? HTTPURLResponse {
                    var headers: [String: String] = [:]
                    for (name, value) in response.allHeaderFields {
                        if let name = name as? String, let value = value as? String { headers[name] = value }
                    }
                    continuation.resume(returning: HTTPAnswer(status: response.statusCode, headers: headers, body: data ?? Data()))
                } else {
                    continuation.resume(throwing: URLError(.badServerResponse))
                }
            }
            task.resume()
        }
    }
}
