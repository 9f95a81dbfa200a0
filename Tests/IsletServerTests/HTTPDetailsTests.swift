import Foundation
import IsletCore
import IsletTesting
import Testing

/// The HTTP details a client trips on: HEAD, 405s in the metrics, bodies of routes
/// that take none, repeated JSON keys, messages that read as sentences.
@Suite("API: HTTP details")
struct HTTPDetailsTests {
    /// A HEAD request on a connection of its own: the status, the header fields and
    /// every byte after them until the server closes the connection.
    func head(_ port: Int, _ path: String) async throws -> (status: Int, headers: [String: String], rest: Data) {
        try await runBlocking { () throws -> (Int, [String: String], Data) in
            let connection = try RawHTTPConnection(port: port)
            try connection.write("HEAD \(path) HTTP/1.1\r\nHost: islet\r\nConnection: close\r\n\r\n")
            let text = try connection.readToEnd()
            guard let end = text.range(of: Data("\r\n\r\n".utf8)) else { throw RawHTTPError("no head in the answer") }
            let lines = String(decoding: text[..<end.lowerBound], as: UTF8.self).split(separator: "\r\n")
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
            }
            let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
            return (status, headers, Data(text[end.upperBound...]))
        }
    }

    @Test func headIsAnsweredAsGetWithoutABody() async throws {
        try await ServerHarness.with { h in
            let port = h.application.port
            let get = try await httpRequest(port: port, path: "/healthz")
            let answer = try await head(port, "/healthz")
            #expect(answer.status == 200)
            #expect(answer.headers["content-type"] == get.headers["content-type"])
            #expect(answer.headers["content-length"] == String(get.body.count))
            #expect(answer.rest.isEmpty, "HEAD answered with a body: \(String(decoding: answer.rest, as: UTF8.self))")
            // A path without GET still refuses HEAD, and says what it takes.
            let refused = try await head(port, "/v1/apps/x/keys/rotate")
            #expect(refused.status == 405)
            #expect(refused.headers["allow"] == "POST")
            #expect(refused.rest.isEmpty)
            let allowed = try await h.call("DELETE", "/healthz", key: nil)
            #expect(allowed.headers["allow"] == "GET, HEAD")
        }
    }

    @Test func aRefusedMethodIsCountedUnderItsRoute() async throws {
        try await ServerHarness.with { h in
            #expect(try await h.call("DELETE", "/v1/apps/app_00000000000000000000", key: nil).status == 405)
            #expect(try await h.call("GET", "/no/such/route", key: nil).status == 404)
            let text = try #require(try await h.call("GET", "/metrics", key: nil).json.stringValue)
            #expect(text.contains(#"islet_http_requests_total{node="\#(h.nodeID)",route="/v1/apps/{app_id}",method="DELETE",status="405"} 1"#), "\(text)")
            #expect(text.contains(#"islet_http_requests_total{node="\#(h.nodeID)",route="unmatched",method="GET",status="404"} 1"#))
        }
    }

    @Test func keyRotationChecksItsBodyLikeEveryRoute() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let rotate = "/v1/apps/\(app.id)/keys/rotate"
            let unknown = try await h.call("POST", rotate, key: ServerHarness.adminToken, json: ["force": true])
            #expect(unknown.status == 422)
            #expect(unknown.errorFields == ["force"])
            let broken = try await h.call("POST", rotate, key: ServerHarness.adminToken, body: "{")
            #expect(broken.status == 400)
            let text = try await h.call(
                "POST", rotate, key: ServerHarness.adminToken, body: nil, headers: ["Content-Type": "text/plain"])
            #expect(text.status == 200, "an empty body is no body, whatever its type")
            // Nothing was rotated by the refused requests: the keys of the last good
            // rotation work, an empty body and {} both rotate.
            let empty = try await h.call("POST", rotate, key: ServerHarness.adminToken, body: "{}")
            #expect(empty.status == 200)
            let document = try await h.call("GET", "/openapi.json", key: nil)
            let route = document["paths"]?["/v1/apps/{app_id}/keys/rotate"]?["post"]
            #expect(route?["requestBody"]?["content"]?["application/json"]?["schema"]?["additionalProperties"] == false)
            #expect(route?["responses"]?["422"] != nil)
        }
    }

    @Test func aRepeatedKeyInABodyIsRefusedAndNamed() async throws {
        try await ServerHarness.with { h in
            let reply = try await h.call(
                "POST", "/v1/apps", key: ServerHarness.adminToken,
                body: #"{"name":"A","bundle_id":"com.example.a","name":"B"}"#)
            #expect(reply.status == 400)
            #expect(reply["detail"]?.stringValue?.contains(#"the key "name" appears twice"#) == true, "\(reply.json.jsonText)")
            let equivalent = try await h.call(
                "POST", "/v1/apps", key: ServerHarness.adminToken,
                body: #"{"name":"A","bundle_id":"com.example.a","caf\u00e9":1,"cafe\u0301":2}"#)
            #expect(equivalent.status == 400)
            #expect(equivalent["detail"]?.stringValue?.contains("canonically equivalent") == true)
            #expect(try await h.call("GET", "/v1/apps", key: ServerHarness.adminToken)["items"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test func aSuggestionEndsTheSentenceOnce() async throws {
        try await ServerHarness.with { h in
            let reply = try await h.call(
                "POST", "/v1/apps", key: ServerHarness.adminToken, json: ["nme": "A", "name": "A", "bundle_id": "com.example.a"])
            #expect(reply.status == 422)
            #expect(reply["detail"]?.stringValue == "The field nme is invalid: is not a field of this request; did you mean name?")
        }
    }
}
