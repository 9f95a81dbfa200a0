import Foundation
import Glibc
import HTTPServer
import IsletSync

/// A local webhook receiver: Islet's HTTP server on 127.0.0.1, answering on its own
/// threads, recording each request it reads.
///
/// - `/echo`: 201, the request body back, `Retry-After: 120`.
/// - `/status/N`: status N with `Retry-After: 7`.
/// - `/large`: 200 with a 200 KiB body of a known pattern.
/// - `/slow`: sleeps 2 s on the server's thread, then 200.
/// - anything else: 200 `ok`.
final class Receiver: Sendable {
    let server: HTTPServer
    private let seen: Lock<[HTTPRequest]>

    /// The body `/large` answers.
    static let largeBody = Data((0..<(200 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })

    init(threads: Int = 2) throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threads = threads
        configuration.maxBodyBytes = 1024 * 1024
        let seen = Lock<[HTTPRequest]>([])
        self.seen = seen
        server = HTTPServer(configuration: configuration, immediate: { request in
            seen.withLock { $0.append(request) }
            return Receiver.answer(request)
        })
        try server.start()
    }

    /// The URL of `path` on the receiver.
    func url(_ path: String) -> String { "http://127.0.0.1:\(server.port)\(path)" }

    /// The requests read so far.
    var requests: [HTTPRequest] { seen.withLock { $0 } }

    func stop() async { await server.shutdown(gracePeriod: .seconds(5)) }

    private static func answer(_ request: HTTPRequest) -> HTTPResponse {
        if request.path == "/echo" {
            return HTTPResponse(status: 201, headers: ["Retry-After": "120", "X-Echo": "yes"], body: request.body)
        }
        if request.path.hasPrefix("/status/"), let status = Int(request.path.dropFirst("/status/".count)) {
            return HTTPResponse(status: status, headers: ["Retry-After": "7"], body: Data("status \(status)\n".utf8))
        }
        if request.path == "/large" {
            return HTTPResponse(status: 200, contentType: "application/octet-stream", body: largeBody)
        }
        if request.path == "/slow" {
            usleep(2_000_000)
        }
        return HTTPResponse(status: 200, contentType: "text/plain", body: Data("ok".utf8))
    }
}
