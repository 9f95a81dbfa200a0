import Foundation
import HTTPServer
import IsletSync
import IsletTesting

/// A local webhook receiver: Islet's HTTP server on 127.0.0.1, answering on its own
/// threads, recording each request it reads.
///
/// - `/echo`: 201, the request body back, `Retry-After: 120`.
/// - `/status/N`: status N with `Retry-After: 7`.
/// - `/large`: 200 with a 200 KiB body of a known pattern.
/// - `/hold`: waits on the server's thread until `release()` (which `stop()` does; a
///   minute at most, scaled as the tests' deadlines are), then 200.
/// - anything else: 200 `ok`.
final class Receiver: Sendable {
    let server: HTTPServer
    private let seen: Lock<[HTTPRequest]>
    /// Whether `/hold` requests may be answered.
    private let gate: ConditionLock<Bool>

    /// The body `/large` answers.
    static let largeBody = Data((0..<(200 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })

    init(threads: Int = 2) throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threads = threads
        configuration.maxBodyBytes = 1024 * 1024
        let seen = Lock<[HTTPRequest]>([])
        self.seen = seen
        let gate = ConditionLock(false)
        self.gate = gate
        server = HTTPServer(configuration: configuration, immediate: { request in
            seen.withLock { $0.append(request) }
            if request.path == "/hold" { gate.wait(until: { $0 }, timeout: TestTime.scaled(.seconds(60))) { _ in } }
            return Receiver.answer(request)
        })
        try server.start()
    }

    /// The URL of `path` on the receiver.
    func url(_ path: String) -> String { "http://127.0.0.1:\(server.port)\(path)" }

    /// The requests read so far.
    var requests: [HTTPRequest] { seen.withLock { $0 } }

    /// Lets every `/hold` request, waiting or still to come, be answered.
    func release() { gate.withLockBroadcasting { $0 = true } }

    func stop() async {
        release()
        await server.shutdown(gracePeriod: .seconds(5))
    }

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
        return HTTPResponse(status: 200, contentType: "text/plain", body: Data("ok".utf8))
    }
}
