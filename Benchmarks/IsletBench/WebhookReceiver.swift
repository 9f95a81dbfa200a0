import Foundation
import HTTPServer
import IsletSync

/// `webhook-receiver --port N [--threads N]`: a webhook endpoint for `make bench`,
/// answering every POST 204 on its own threads and counting them, with the time of
/// the first and the last; `GET /stats` answers `{count, first, last, connections}`
/// (Unix seconds). Runs until SIGTERM.
func webhookReceiver(_ arguments: [String]) async throws {
    struct Stats {
        var count = 0
        var first: Double?
        var last: Double?
        var peers: Set<String> = []
    }
    var configuration = HTTPServerConfiguration()
    configuration.port = Int(value("--port", in: arguments) ?? "0") ?? 0
    configuration.threads = Int(value("--threads", in: arguments) ?? "2") ?? 2
    let stats = Lock(Stats())
    let server = HTTPServer(configuration: configuration, immediate: { request in
        if request.method == "GET" {
            let body = stats.withLock { s in
                "{\"count\":\(s.count),\"first\":\(s.first ?? 0),\"last\":\(s.last ?? 0),\"connections\":\(s.peers.count)}"
            }
            return HTTPResponse(status: 200, contentType: "application/json", body: Data(body.utf8))
        }
        let now = Date().timeIntervalSince1970
        stats.withLock { s in
            s.count += 1
            if s.first == nil { s.first = now }
            s.last = now
            if let peer = request.remoteAddress { s.peers.insert(peer) }
        }
        return HTTPResponse(status: 204)
    })
    let port = try server.start()
    FileHandle.standardOutput.write(Data("port=\(port)\n".utf8))
    let stop = DispatchSemaphore(value: 0)
    signal(SIGTERM, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: SIGTERM)
    source.setEventHandler { stop.signal() }
    source.resume()
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread {
            stop.wait()
            continuation.resume()
        }.start()
    }
    await server.shutdown()
}
