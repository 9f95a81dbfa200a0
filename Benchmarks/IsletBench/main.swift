import APNs
import Foundation
import HTTP2
import IsletCore
import IsletCrypto
import Synchronization

/// `islet-bench`: helpers that `make bench` runs beside the real programs.
///
/// - `h2-server --port N [--threads N] [--cert F --key F]`: an HTTP/2 server over TLS
///   that answers every request 200 with an `apns-id`, doing nothing else: the
///   ceiling of Islet's HTTP/2 layer, to compare with nghttpd and `islet sim`.
/// - `apns-client --url URL --ca F --key F.p8 --key-id K --team-id T [--connections N]
///   [--count N] [--concurrency N]`: sends N alert pushes through Islet's APNs client
///   and prints `pushes_per_second=… delivered=… seconds=…`.
/// - `fanout --devices N [--kill-at F] [--wire-rounds R] [--database-growth]`: one
///   update through the API to N holders, beside h2load to the same simulator and
///   tokens, and the database's growth per push (see Fanout.swift).
/// - `broadcast --subscribers N --holders M`: the same update to N phones on a
///   broadcast channel and to M token holders (see Broadcast.swift).
/// - `paced --port P --app A --key K --kind register|update|healthz --rate R`: latency
///   at a fixed request rate (see Paced.swift).
/// - `populate --database PATH --app A --tokens N`: registered tokens written straight
///   into a stopped server's database (see Populate.swift).
/// - `populate-sends --database PATH --app A --sends N --targets T [--failures F]`:
///   N sends of T pushes each over the last day, written the same way (see Populate.swift).
/// - `webhook-out [--count N] [--concurrency N]`: POSTs through the outbound HTTP
///   client to a receiver in the same process (see WebhookOut.swift).
/// - `webhook-receiver --port N`: a counting webhook endpoint (see WebhookReceiver.swift).
/// - `retention [--minutes M] [--seconds S]`: the database's size under a steady
///   load with a retention of M minutes (see Retention.swift).

final class NullDelegate: HTTP2ServerDelegate {
    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        HTTP2ServerReply(HTTP2Response(status: 200, headers: [("apns-id", "d3b0f5c4-5a4e-4b8e-9f00-000000000000")]))
    }
}

func value(_ flag: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "h2-server":
    var configuration = HTTP2ServerConfiguration()
    configuration.port = Int(value("--port", in: arguments) ?? "0") ?? 0
    configuration.threads = Int(value("--threads", in: arguments) ?? "1") ?? 1
    if let cert = value("--cert", in: arguments), let key = value("--key", in: arguments) {
        configuration.tls = TLSServerConfiguration(
            certificateChainPEM: try String(contentsOfFile: cert, encoding: .utf8),
            privateKeyPEM: try String(contentsOfFile: key, encoding: .utf8))
    } else {
        let authority = try LocalCertificateAuthority.generate()
        configuration.tls = TLSServerConfiguration(
            certificateChainPEM: authority.serverCertificateChainPEM, privateKeyPEM: authority.serverPrivateKeyPEM)
    }
    let server = try HTTP2Server(configuration: configuration, delegate: NullDelegate())
    let port = try server.start()
    print("h2-server listening on \(port)")
    while true { sleep(3600) }
case "apns-client":
    try await apnsClient(arguments)
case "fanout":
    try await fanout(arguments)
case "broadcast":
    try await broadcast(arguments)
case "paced":
    try paced(arguments)
case "populate":
    try populate(arguments)
case "populate-sends":
    try populateSends(arguments)
case "webhook-receiver":
    try await webhookReceiver(arguments)
case "webhook-out":
    try await webhookOut(arguments)
case "retention":
    try await retention(arguments)
default:
    FileHandle.standardError.write(Data("usage: islet-bench h2-server --port N [--threads N] | apns-client --url URL ...\n".utf8))
    exit(2)
}

/// Sends `--count` pushes with at most `--concurrency` in flight and reports the rate.
func apnsClient(_ arguments: [String]) async throws {
    guard let url = value("--url", in: arguments).flatMap(URL.init(string:)),
        let keyPath = value("--key", in: arguments), let keyID = value("--key-id", in: arguments),
        let teamID = value("--team-id", in: arguments)
    else {
        FileHandle.standardError.write(Data("apns-client needs --url, --key, --key-id and --team-id\n".utf8))
        exit(2)
    }
    var configuration = APNsClientConfiguration()
    configuration.sandboxURL = url
    configuration.trustRootsPEM = try value("--ca", in: arguments).map { try String(contentsOfFile: $0, encoding: .utf8) }
    configuration.connectionsPerPool = Int(value("--connections", in: arguments) ?? "1") ?? 1
    if let threads = value("--threads", in: arguments).flatMap(Int.init) { configuration.threadsPerPool = threads }
    let count = Int(value("--count", in: arguments) ?? "100000") ?? 100_000
    let concurrency = Int(value("--concurrency", in: arguments) ?? "1000") ?? 1_000
    let key = APNsSigningKey(
        keyID: keyID, teamID: teamID, key: try P256.SigningKey(pemRepresentation: try String(contentsOfFile: keyPath, encoding: .utf8)))
    let client = APNsClient(configuration: configuration)
    let payload = Data(#"{"aps":{"alert":{"title":"Order","body":"On its way"}}}"#.utf8)
    let token = String(repeating: "ab", count: 32)
    // Warm up: open every connection and lift the one-stream limit.
    for _ in 0..<(configuration.connectionsPerPool * 2) {
        _ = await client.send(APNsRequest(deviceToken: token, topic: "com.example.app", pushType: .alert, payload: payload), key: key, environment: .sandbox)
    }
    // Keep `concurrency` pushes in flight with completion callbacks, as the
    // delivery queue does: no task per push.
    let window = Window(total: count)
    let started = ContinuousClock.now
    @Sendable func sendNext() {
        guard window.claim() else { return }
        client.send(APNsRequest(deviceToken: token, topic: "com.example.app", pushType: .alert, payload: payload), key: key, environment: .sandbox) { result in
            if window.finished(delivered: result.disposition == .delivered) == count / 10 {
                window.rssAtTenth.store(residentKilobytes(), ordering: .relaxed)
            }
            sendNext()
        }
    }
    for _ in 0..<min(concurrency, count) { sendNext() }
    window.wait()
    let delivered = window.delivered
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    // Memory a tenth of the way in and at the end: it should not grow with the count.
    let tenth = Double(window.rssAtTenth.load(ordering: .relaxed)) / 1024
    let end = Double(residentKilobytes()) / 1024
    print("pushes_per_second=\(Int(Double(count) / seconds)) delivered=\(delivered) seconds=\(String(format: "%.3f", seconds))"
        + " rss_tenth_mb=\(String(format: "%.1f", tenth)) rss_end_mb=\(String(format: "%.1f", end))")
    await client.shutdown()
}

/// Counts pushes claimed and finished, and wakes the waiter when all are done.
/// Atomics rather than a lock: the harness should cost the client's thread as
/// little as it can.
final class Window: Sendable {
    private let claimed = Atomic<Int>(0)
    private let finishedCount = Atomic<Int>(0)
    private let deliveredCount = Atomic<Int>(0)
    private let total: Int
    private let done = DispatchSemaphore(value: 0)
    /// Resident memory (KB) once a tenth of the pushes were answered.
    let rssAtTenth = Atomic<Int>(0)

    init(total: Int) {
        self.total = total
    }

    func claim() -> Bool {
        claimed.wrappingAdd(1, ordering: .relaxed).newValue <= total
    }

    /// Counts one answer; answers how many have been counted.
    @discardableResult
    func finished(delivered: Bool) -> Int {
        if delivered { deliveredCount.wrappingAdd(1, ordering: .relaxed) }
        let finished = finishedCount.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
        if finished == total { done.signal() }
        return finished
    }

    func wait() {
        done.wait()
    }

    var delivered: Int { deliveredCount.load(ordering: .acquiring) }
}

/// This process's resident memory in KB (`VmRSS` in /proc/self/status).
func residentKilobytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
    }
    return 0
}
