import Foundation
import HTTPClient
import HTTPServer
import IsletSync

/// `webhook-out [--count N] [--concurrency N] [--body-bytes N] [--connections N]
/// [--receiver-threads N]`: N POSTs through Islet's outbound HTTP client to a local
/// receiver (Islet's HTTP server, answering 204 on its own threads) in this process,
/// with at most `--concurrency` in flight, over at most `--connections` kept-alive
/// connections; prints `requests_per_second=… ok=… connections=… seconds=…`.
func webhookOut(_ arguments: [String]) async throws {
    let count = Int(value("--count", in: arguments) ?? "20000") ?? 20_000
    let concurrency = Int(value("--concurrency", in: arguments) ?? "64") ?? 64
    let bodyBytes = Int(value("--body-bytes", in: arguments) ?? "500") ?? 500
    var receiverConfiguration = HTTPServerConfiguration()
    receiverConfiguration.port = 0
    receiverConfiguration.threads = Int(value("--receiver-threads", in: arguments) ?? "2") ?? 2
    let peers = Lock<Set<String>>([])
    let receiver = HTTPServer(configuration: receiverConfiguration, immediate: { request in
        if let peer = request.remoteAddress { _ = peers.withLock { $0.insert(peer) } }
        return HTTPResponse(status: 204)
    })
    let port = try receiver.start()
    var configuration = HTTPClientConfiguration()
    configuration.allowPrivateAddresses = true
    configuration.maxConnectionsPerHost = Int(value("--connections", in: arguments) ?? "16") ?? 16
    let client = try HTTPClient(configuration: configuration)
    let request = OutboundRequest(
        url: "http://127.0.0.1:\(port)/hooks/activity", headers: [("Content-Type", "application/json")],
        body: Data(repeating: UInt8(ascii: "x"), count: bodyBytes))

    let next = Lock(0)
    let started = ContinuousClock.now
    let ok = await withTaskGroup(of: Int.self) { group in
        for _ in 0..<min(concurrency, count) {
            group.addTask {
                var ok = 0
                while next.withLock({ claimed in defer { claimed += 1 }; return claimed }) < count {
                    if case .success(let response) = await client.send(request), response.status == 204 { ok += 1 }
                }
                return ok
            }
        }
        return await group.reduce(0, +)
    }
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let connections = peers.withLock { $0.count }
    print("requests_per_second=\(Int(Double(count) / seconds)) ok=\(ok) connections=\(connections)"
        + " seconds=\(String(format: "%.3f", seconds))")
    await client.shutdown()
    await receiver.shutdown()
}
