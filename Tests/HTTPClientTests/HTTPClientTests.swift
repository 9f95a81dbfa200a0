import Foundation
import HTTPClient
import HTTPServer
import IsletSync
import IsletTesting
import Testing

/// A client allowed to reach the local receiver, unless told otherwise.
func makeClient(
    allowPrivate: Bool = true, maxConnectionsPerHost: Int = 16
) throws -> HTTPClient {
    var configuration = HTTPClientConfiguration()
    configuration.allowPrivateAddresses = allowPrivate
    configuration.maxConnectionsPerHost = maxConnectionsPerHost
    return try HTTPClient(configuration: configuration)
}

extension Result {
    var success: Success? {
        if case .success(let value) = self { return value }
        return nil
    }

    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

@Suite("Outbound HTTP client against a local receiver")
struct HTTPClientTests {
    @Test func postsTheBodyAndHeadersIntactAndReadsTheAnswer() async throws {
        let receiver = try Receiver()
        let client = try makeClient()
        let body = Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let request = OutboundRequest(
            url: receiver.url("/echo"),
            headers: [("Content-Type", "application/json"), ("X-Islet-Signature", "sha256=abc123"), ("X-Empty", "")],
            body: body)
        let result = await client.send(request)
        let response = try #require(result.success, "\(result)")
        #expect(response.status == 201)
        #expect(response.headers["retry-after"] == "120")
        #expect(response.headers["x-echo"] == "yes")
        #expect(response.body == body)
        #expect(response.duration > .zero)

        let seen = try #require(receiver.requests.first)
        #expect(receiver.requests.count == 1)
        #expect(seen.method == "POST")
        #expect(seen.path == "/echo")
        #expect(seen.body == body)
        #expect(seen.headers["content-type"] == "application/json")
        #expect(seen.headers["x-islet-signature"] == "sha256=abc123")
        #expect(seen.headers["x-empty"] == "")
        #expect(seen.headers["user-agent"]?.hasPrefix("Islet/") == true)
        #expect(seen.headers["expect"] == nil)
        await client.shutdown()
        await receiver.stop()
    }

    @Test func sendsAGetWithoutABodyAndNoContentType() async throws {
        let receiver = try Receiver()
        let client = try makeClient()
        let response = try #require(await client.send(OutboundRequest(url: receiver.url("/plain"))).success)
        #expect(response.status == 200)
        #expect(response.body == Data("ok".utf8))
        #expect(receiver.requests.first?.method == "GET")
        #expect(receiver.requests.first?.headers["content-type"] == nil)
        await client.shutdown()
        await receiver.stop()
    }

    @Test(arguments: [404, 410, 429, 500, 503])
    func answersEveryStatusWithItsHeaders(status: Int) async throws {
        let receiver = try Receiver()
        let client = try makeClient()
        let response = try #require(await client.send(OutboundRequest(url: receiver.url("/status/\(status)"), body: Data("x".utf8))).success)
        #expect(response.status == status)
        #expect(response.headers["retry-after"] == "7")
        #expect(response.body == Data("status \(status)\n".utf8))
        await client.shutdown()
        await receiver.stop()
    }

    @Test func keepsOnlyTheFirst64KiBOfABody() async throws {
        let receiver = try Receiver()
        let client = try makeClient()
        let response = try #require(await client.send(OutboundRequest(url: receiver.url("/large"))).success)
        #expect(response.status == 200)
        #expect(response.body.count == OutboundResponse.maxBodyBytes)
        #expect(response.body == Receiver.largeBody.prefix(OutboundResponse.maxBodyBytes))
        #expect(response.headers["content-length"] == String(Receiver.largeBody.count))
        await client.shutdown()
        await receiver.stop()
    }

    @Test func fiveHundredConcurrentRequestsAllComplete() async throws {
        let receiver = try Receiver()
        let client = try makeClient()
        let statuses = await withTaskGroup(of: (Int, Int?, Data?).self) { group in
            for index in 0..<500 {
                group.addTask {
                    let body = Data("delivery \(index)".utf8)
                    let result = await client.send(OutboundRequest(url: receiver.url("/echo"), body: body))
                    return (index, result.success?.status, result.success?.body)
                }
            }
            var all: [Int: (Int?, Data?)] = [:]
            for await (index, status, body) in group { all[index] = (status, body) }
            return all
        }
        #expect(statuses.count == 500)
        #expect(statuses.values.allSatisfy { $0.0 == 201 })
        #expect(statuses.allSatisfy { $0.value.1 == Data("delivery \($0.key)".utf8) })
        #expect(receiver.requests.count == 500)
        await client.shutdown()
        await receiver.stop()
    }

    @Test func reusesKeptAliveConnections() async throws {
        let receiver = try Receiver()
        let client = try makeClient(maxConnectionsPerHost: 4)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    _ = await client.send(OutboundRequest(url: receiver.url("/echo"), body: Data("\(index)".utf8)))
                }
            }
        }
        let requests = receiver.requests
        #expect(requests.count == 200)
        let ports = Set(requests.compactMap { $0.remoteAddress })
        // At most four connections at once, each kept alive for the next request.
        #expect(!ports.isEmpty && ports.count <= 4, "client addresses: \(ports.sorted())")
        await client.shutdown()
        await receiver.stop()
    }

    @Test func aPortWithNothingListeningIsAConnectFailure() async throws {
        let port = try ReservedPort()
        let client = try makeClient()
        let failure = try #require(await client.send(OutboundRequest(url: "http://127.0.0.1:\(port.port)/hook")).failure)
        #expect(failure.kind == .connect, "\(failure)")
        await client.shutdown()
    }

    @Test func aReceiverSlowerThanTheTimeoutIsATimeout() async throws {
        let receiver = try Receiver(threads: 4)
        let client = try makeClient()
        // Held until after the client gave up.
        let result = await client.send(OutboundRequest(url: receiver.url("/hold"), body: Data("x".utf8), timeout: .milliseconds(300)))
        let failure = try #require(result.failure, "\(result)")
        #expect(failure.kind == .timeout, "\(failure)")
        // It was sent once, and not again after the timeout.
        #expect(await eventually { receiver.requests.count == 1 })
        #expect(receiver.requests.count == 1)
        await client.shutdown()
        await receiver.stop()
    }

    @Test func loopbackIsRefusedAtConnectTimeUnlessAllowed() async throws {
        let receiver = try Receiver()
        let client = try makeClient(allowPrivate: false)
        let numeric = try #require(await client.send(OutboundRequest(url: receiver.url("/echo"), body: Data("x".utf8))).failure)
        #expect(numeric.kind == .refusedAddress, "\(numeric)")
        #expect(numeric.message == "127.0.0.1 is a loopback address")
        // A name is checked on the address it resolved to.
        let named = try #require(await client.send(OutboundRequest(url: "http://localhost:\(receiver.server.port)/echo")).failure)
        #expect(named.kind == .refusedAddress, "\(named)")
        #expect(named.message.contains("is a loopback address"))
        #expect(receiver.requests.isEmpty)
        #expect(receiver.server.activeRequests == 0)
        await client.shutdown()
        await receiver.stop()
    }

    @Test func metadataAddressesAreRefusedEvenWhenPrivateOnesAreAllowed() async throws {
        let client = try makeClient(allowPrivate: true)
        // Refused before any packet leaves: the socket is never opened.
        let result = await client.send(OutboundRequest(url: "http://169.254.169.254/latest/meta-data/", timeout: .seconds(5)))
        let failure = try #require(result.failure, "\(result)")
        #expect(failure.kind == .refusedAddress, "\(failure)")
        #expect(failure.message == "169.254.169.254 is a cloud metadata service address")
        await client.shutdown()
    }

    @Test func requestsThatCannotBeSentAsGivenAreInvalid() async throws {
        let receiver = try Receiver()
        let client = try makeClient()
        let injected = await client.send(OutboundRequest(url: receiver.url("/echo"), headers: [("X-A", "1\r\nX-Injected: 2")]))
        #expect(injected.failure?.kind == .invalidRequest, "\(injected)")
        let badName = await client.send(OutboundRequest(url: receiver.url("/echo"), headers: [("X A", "1")]))
        #expect(badName.failure?.kind == .invalidRequest, "\(badName)")
        let scheme = await client.send(OutboundRequest(url: "file:///etc/passwd"))
        #expect(scheme.failure?.kind == .invalidRequest, "\(scheme)")
        #expect(receiver.requests.isEmpty)
        await client.shutdown()
        await receiver.stop()
    }

    @Test func shutdownFailsRequestsInFlightAndIsIdempotent() async throws {
        let receiver = try Receiver(threads: 4)
        let client = try makeClient()
        let results = Lock<[Result<OutboundResponse, OutboundFailure>]>([])
        let senders = (0..<4).map { _ in
            Task {
                // A timeout far beyond the test's own pace: only the shutdown may end
                // these (on a busy machine, reaching it can take seconds).
                let result = await client.send(OutboundRequest(
                    url: receiver.url("/hold"), body: Data("x".utf8), timeout: .seconds(300)))
                results.withLock { $0.append(result) }
            }
        }
        // The receiver holds every answer until the client has shut down.
        #expect(await eventually { !receiver.requests.isEmpty })
        await client.shutdown()
        for sender in senders { await sender.value }
        let outcomes = results.withLock { $0 }
        #expect(outcomes.count == 4)
        #expect(outcomes.allSatisfy { $0.failure?.kind == .shutDown }, "\(outcomes)")
        await client.shutdown()
        let late = await client.send(OutboundRequest(url: receiver.url("/plain")))
        #expect(late.failure?.kind == .shutDown)
        await receiver.stop()
    }

    @Test func resolvesNamesToNumericAddresses() throws {
        #expect(try HTTPClient.resolve(host: "127.0.0.1", port: 80) == ["127.0.0.1"])
        #expect(try HTTPClient.resolve(host: "::1", port: 443) == ["::1"])
        let local = try HTTPClient.resolve(host: "localhost", port: 80)
        #expect(!local.isEmpty && local.allSatisfy { $0 == "127.0.0.1" || $0 == "::1" }, "\(local)")
        #expect(throws: OutboundFailure.self) { try HTTPClient.resolve(host: "no-such-host.invalid", port: 80) }
    }
}
