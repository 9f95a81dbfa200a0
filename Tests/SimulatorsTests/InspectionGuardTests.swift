import Foundation
import HTTPServer
import IsletTesting
@testable import Simulators
import Testing

/// The inspection API refuses what a web page can send it: a page's own name in
/// `Host` (DNS rebinding), a foreign `Origin` on a change, a body that is not JSON.
/// Requests go over raw sockets, with exactly the header fields a browser would send.
@Suite("Simulator: the inspection API refuses web pages")
struct InspectionGuardTests {
    static let token = String(repeating: "cd", count: 32)

    /// Sends one request with exactly `fields` (Host included, when given).
    func send(
        _ live: LiveSimulator, _ method: String, _ path: String, fields: [(String, String)], body: String? = nil,
        version: String = "HTTP/1.1"
    ) async throws -> RawHTTPResponse {
        let connection = try RawHTTPConnection(port: live.simulator.inspectPort!)
        return try await connection.async { connection in
            var head = "\(method) \(path) \(version)\r\nConnection: close\r\n"
            for (name, value) in fields { head += "\(name): \(value)\r\n" }
            if let body { head += "Content-Length: \(body.utf8.count)\r\n" }
            try connection.write(head + "\r\n" + (body ?? ""))
            return try connection.readResponse()
        }
    }

    func registerToken(_ live: LiveSimulator) async throws {
        let registered = try await live.inspect(
            "/tokens", method: "POST", body: #"{"token":"\#(Self.token)","kind":"device"}"#)
        try #require(registered.status == 201)
    }

    func tokenCount(_ live: LiveSimulator) -> Int { live.simulator.engine.tokens().count }

    @Test func aRebindingHostCannotReadTokensOrPushes() async throws {
        let live = try LiveSimulator()
        try await registerToken(live)
        let port = live.simulator.inspectPort!
        for path in ["/tokens", "/pushes", "/activities", "/schemas", "/healthz"] {
            for host in ["evil.example:\(port)", "evil.example", "127.0.0.1.evil.example:\(port)", "localhost.evil.example"] {
                let answer = try await send(live, "GET", path, fields: [("Host", host)])
                #expect(answer.status == 403, "\(host) \(path)")
                #expect(answer.headers["content-type"] == "application/problem+json")
                #expect((answer.json?["detail"] as? String)?.hasPrefix("Host: ") == true)
                #expect(!answer.text.contains(Self.token))
            }
        }
        // A change is refused the same way, and changes nothing.
        let reset = try await send(live, "POST", "/reset", fields: [("Host", "evil.example:\(port)")])
        #expect(reset.status == 403)
        #expect(tokenCount(live) == 1)
        await live.simulator.shutdown()
    }

    @Test func aForeignOriginCannotResetOrRegister() async throws {
        let live = try LiveSimulator()
        try await registerToken(live)
        let port = live.simulator.inspectPort!
        for origin in ["https://evil.example", "http://evil.example:\(port)", "null", "http://127.0.0.1.evil.example"] {
            let reset = try await send(
                live, "POST", "/reset", fields: [("Host", "127.0.0.1:\(port)"), ("Origin", origin)])
            #expect(reset.status == 403, "\(origin)")
            #expect((reset.json?["detail"] as? String)?.hasPrefix("Origin: ") == true)
            let register = try await send(
                live, "POST", "/tokens",
                fields: [("Host", "127.0.0.1:\(port)"), ("Origin", origin), ("Content-Type", "application/json")],
                body: #"{"token":"\#(String(repeating: "ef", count: 32))","kind":"device"}"#)
            #expect(register.status == 403, "\(origin)")
        }
        #expect(tokenCount(live) == 1)
        // Its own origin may.
        let own = try await send(
            live, "POST", "/reset", fields: [("Host", "127.0.0.1:\(port)"), ("Origin", "http://127.0.0.1:\(port)")])
        #expect(own.status == 204)
        #expect(tokenCount(live) == 0)
        await live.simulator.shutdown()
    }

    @Test func aChangeMustSendJSON() async throws {
        let live = try LiveSimulator()
        let port = live.simulator.inspectPort!
        let body = #"{"token":"\#(Self.token)","kind":"device"}"#
        // What a cross-site form or a fetch without a preflight sends.
        for contentType in ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
            let answer = try await send(
                live, "POST", "/tokens", fields: [("Host", "127.0.0.1:\(port)"), ("Content-Type", contentType)], body: body)
            #expect(answer.status == 415, "\(contentType)")
            #expect((answer.json?["detail"] as? String)?.hasPrefix("Content-Type: ") == true)
        }
        let untyped = try await send(live, "POST", "/tokens", fields: [("Host", "127.0.0.1:\(port)")], body: body)
        #expect(untyped.status == 415)
        #expect(tokenCount(live) == 0)
        // A form post to /reset has no body, but still its form content type.
        try await registerToken(live)
        let form = try await send(
            live, "POST", "/reset",
            fields: [("Host", "127.0.0.1:\(port)"), ("Content-Type", "application/x-www-form-urlencoded")], body: "")
        #expect(form.status == 415)
        #expect(tokenCount(live) == 1)
        await live.simulator.shutdown()
    }

    @Test func theSimulatorsOwnClientsAreServed() async throws {
        let live = try LiveSimulator()
        let port = live.simulator.inspectPort!
        for host in ["127.0.0.1:\(port)", "127.0.0.1", "localhost:\(port)", "LocalHost", "[::1]:\(port)", "[::1]"] {
            #expect(try await send(live, "GET", "/tokens", fields: [("Host", host)]).status == 200, "\(host)")
        }
        // No Host at all (an HTTP/1.0 client): no browser sends that.
        #expect(try await send(live, "GET", "/healthz", fields: [], version: "HTTP/1.0").status == 200)
        let registered = try await send(
            live, "POST", "/tokens",
            fields: [("Host", "localhost:\(port)"), ("Content-Type", "application/json; charset=utf-8")],
            body: #"{"token":"\#(Self.token)","kind":"device"}"#)
        #expect(registered.status == 201)
        let reset = try await send(live, "POST", "/reset", fields: [("Host", "127.0.0.1:\(port)")])
        #expect(reset.status == 204)
        #expect(tokenCount(live) == 0)
        await live.simulator.shutdown()
    }

    @Test func hostRulesFollowTheListeningAddress() {
        let loopback = InspectionGuard(listeningHost: "127.0.0.1")
        #expect(!loopback.allows(hostField: "192.168.1.5:2198"))
        #expect(!loopback.allows(hostField: "localhost:abc"))
        #expect(!loopback.allows(hostField: "[::1"))
        #expect(!loopback.allows(hostField: ""))
        let lan = InspectionGuard(listeningHost: "192.168.1.5")
        #expect(lan.allows(hostField: "192.168.1.5:2198"))
        #expect(!lan.allows(hostField: "10.0.0.1:2198"))
        let v6 = InspectionGuard(listeningHost: "fd00::5")
        #expect(v6.allows(hostField: "[FD00::5]:2198"))
        // On every address: any IP address (no DNS answer moves one), never a name.
        let everywhere = InspectionGuard(listeningHost: "0.0.0.0")
        #expect(everywhere.allows(hostField: "10.0.0.1:2198"))
        #expect(everywhere.allows(hostField: "[fd00::5]:2198"))
        #expect(!everywhere.allows(hostField: "evil.example:2198"))
        #expect(!everywhere.allows(hostField: "10.0.0.300:2198"))
        #expect(everywhere.allows(origin: "http://10.0.0.1:2198"))
        #expect(!everywhere.allows(origin: "ftp://10.0.0.1:2198"))
        #expect(!everywhere.allows(origin: "http://10.0.0.1:2198/path"))
    }
}
