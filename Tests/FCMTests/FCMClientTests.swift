import FCM
import Foundation
import HTTP2
import HTTPClient
import IsletCore
import IsletCrypto
import IsletSync
import IsletTesting
import Testing

/// A token endpoint and an FCM send endpoint on one HTTP/2 server over TLS: the
/// token endpoint checks the assertion (RS256 by the account's key, its claims) and
/// hands out numbered tokens; the send endpoint answers what the test scripts,
/// and records what it was sent.
final class FakeGoogle: HTTP2ServerDelegate, @unchecked Sendable {
    // @unchecked: every mutable member is behind `state`'s lock.
    struct State {
        var issued: [String] = []
        var refusedAssertions = 0
        var sends: [(token: String, body: JSONValue)] = []
        /// Answers for the next sends, first first; then 200.
        var script: [(status: Int, body: String, headers: [(String, String)])] = []
        /// Access tokens the send endpoint refuses (401).
        var revoked: Set<String> = []
        /// Answers for the next token requests, first first.
        var tokenScript: [Int] = []
    }

    let state = Lock(State())
    let publicKey: RSA.VerifyingKey
    let clientEmail: String
    var tokenURI = ""

    init(publicKey: RSA.VerifyingKey, clientEmail: String) {
        self.publicKey = publicKey
        self.clientEmail = clientEmail
    }

    func connectionOpened(_ connection: HTTP2ServerConnectionContext) {}
    func connectionClosed(_ connection: HTTP2ServerConnectionContext) {}

    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        if request.path == "/token" { return token(request) }
        let authorization = request.fields.first("authorization") ?? ""
        return state.withLock { state in
            let token = String(authorization.dropFirst("Bearer ".count))
            guard state.issued.contains(token), !state.revoked.contains(token) else {
                return Self.reply(401, #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#)
            }
            state.sends.append((token, (try? JSONValue(parsing: request.body)) ?? .null))
            guard !state.script.isEmpty else {
                return Self.reply(200, #"{"name":"projects/islet-test/messages/0:\#(state.sends.count)"}"#)
            }
            let next = state.script.removeFirst()
            return Self.reply(next.status, next.body, headers: next.headers)
        }
    }

    private func token(_ request: HTTP2ServerRequest) -> HTTP2ServerReply {
        if let status = state.withLock({ $0.tokenScript.isEmpty ? nil : $0.tokenScript.removeFirst() }) {
            return Self.reply(status, #"{"error":"rate_limit_exceeded"}"#)
        }
        let form = Dictionary(
            String(decoding: request.body, as: UTF8.self).split(separator: "&").map { pair -> (String, String) in
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                return (parts[0], (parts.count > 1 ? parts[1] : "").removingPercentEncoding ?? "")
            }, uniquingKeysWith: { first, _ in first })
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let compact = form["assertion"],
            let jwt = try? JSONWebToken(parsing: compact), jwt.isValidRS256(using: publicKey),
            jwt.claims["iss"] == .string(clientEmail), jwt.claims["aud"] == .string(tokenURI),
            jwt.claims["scope"] == .string(FCMAccessTokens.scope),
            case .integer(let iat)? = jwt.claims["iat"], case .integer(let exp)? = jwt.claims["exp"], exp - iat <= 3600
        else {
            state.withLock { $0.refusedAssertions += 1 }
            return Self.reply(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
        }
        let token = state.withLock { state in
            let token = "ya29.token-\(state.issued.count + 1)"
            state.issued.append(token)
            return token
        }
        return Self.reply(200, #"{"access_token":"\#(token)","expires_in":3599,"token_type":"Bearer"}"#)
    }

    static func reply(_ status: Int, _ body: String, headers: [(String, String)] = []) -> HTTP2ServerReply {
        HTTP2ServerReply(HTTP2Response(
            status: status, headers: [("content-type", "application/json")] + headers.map { (name: $0.0, value: $0.1) },
            body: Data(body.utf8)))
    }
}

/// A service account, a fake Google on port 0, and the clients that talk to it.
struct FCMRig {
    let account: FCMServiceAccount
    let google: FakeGoogle
    let server: HTTP2Server
    let http: HTTPClient
    let client: FCMClient
    let clock: ManualWallClock
    let tokens: FCMAccessTokens

    static func with(_ body: (FCMRig) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            let key = try RSA.SigningKey.generate()
            let authority = try LocalCertificateAuthority.generate()
            let google = FakeGoogle(publicKey: key.publicKey, clientEmail: "islet@islet-test.iam.gserviceaccount.com")
            var configuration = HTTP2ServerConfiguration()
            configuration.port = 0
            configuration.tls = TLSServerConfiguration(
                certificateChainPEM: authority.serverCertificateChainPEM, privateKeyPEM: authority.serverPrivateKeyPEM)
            let server = try HTTP2Server(configuration: configuration, delegate: google)
            let port = try server.start()
            google.tokenURI = "https://127.0.0.1:\(port)/token"
            let caFile = directory.appendingPathComponent("ca.pem")
            try authority.caCertificatePEM.write(to: caFile, atomically: true, encoding: .utf8)
            var httpSettings = HTTPClientConfiguration()
            httpSettings.allowPrivateAddresses = true
            httpSettings.caFile = caFile.path
            let http = try HTTPClient(configuration: httpSettings)
            var fcm = FCMClientConfiguration()
            fcm.url = URL(string: "https://127.0.0.1:\(port)")!
            fcm.trustRootsPEM = authority.caCertificatePEM
            let client = FCMClient(configuration: fcm)
            let account = FCMServiceAccount(
                projectID: "islet-test", clientEmail: google.clientEmail, privateKeyPEM: key.pemRepresentation,
                privateKeyID: "key-1", tokenURI: google.tokenURI)
            let clock = ManualWallClock(start: Date(timeIntervalSince1970: 1_800_000_000))
            let tokens = try FCMAccessTokens(account: account, exchange: CurlTokenExchange(client: http), clock: clock)
            let rig = FCMRig(
                account: account, google: google, server: server, http: http, client: client, clock: clock, tokens: tokens)
            do {
                try await body(rig)
            } catch {
                await rig.stop()
                throw error
            }
            await rig.stop()
        }
    }

    func stop() async {
        await client.shutdown()
        await http.shutdown()
        await server.shutdown(gracePeriod: .seconds(1))
    }

    static let message = FCMMessage(
        token: "fcm-device-token-1", data: ["islet_event": "update", "content_state": #"{"eta":5}"#], priority: "normal",
        ttl: 3600, collapseKey: "islet-order-1")
}

@Suite("FCM client: access tokens and data messages over HTTP/2")
struct FCMClientTests {
    @Test func aMessageGoesWithAnAccessTokenTheAssertionEarned() async throws {
        try await FCMRig.with { rig in
            let result = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            #expect(result.disposition == .delivered, "\(result.error ?? "")")
            #expect(result.response?.messageName == "projects/islet-test/messages/0:1")
            #expect(result.attempts == 1)
            let sent = try #require(rig.google.state.withLock { $0.sends.first })
            #expect(sent.token == "ya29.token-1")
            #expect(sent.body["message"]?["token"] == "fcm-device-token-1")
            #expect(sent.body["message"]?["data"]?["content_state"] == #"{"eta":5}"#)
            #expect(sent.body["message"]?["android"] == ["priority": "normal", "ttl": "3600s", "collapse_key": "islet-order-1"])

            // The token is kept and shared: ten more sends, concurrently, no new exchange.
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<10 {
                    group.addTask { _ = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens) }
                }
            }
            #expect(await rig.tokens.exchanges == 1)
            #expect(rig.google.state.withLock { $0.issued.count } == 1)
            // Shortly before it expires, a new one.
            rig.clock.advance(by: 3599 - 299)
            _ = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            #expect(rig.google.state.withLock { $0.issued } == ["ya29.token-1", "ya29.token-2"])
        }
    }

    @Test func concurrentFirstSendsShareOneExchange() async throws {
        try await FCMRig.with { rig in
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask { _ = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens) }
                }
            }
            #expect(rig.google.state.withLock { $0.issued.count } == 1)
            #expect(rig.google.state.withLock { $0.sends.count } == 8)
        }
    }

    @Test func aRefusedAccessTokenIsDroppedAndTheMessageMayGoAgainAtOnceWithANewOne() async throws {
        try await FCMRig.with { rig in
            _ = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            rig.google.state.withLock { _ = $0.revoked.insert("ya29.token-1") }
            // One request: the client does not send it again; the delivery policy does.
            let refused = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            #expect(refused.disposition == .retryNow)
            #expect(refused.attempts == 1)
            #expect(refused.response?.errorCode == "UNAUTHENTICATED")
            let again = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            #expect(again.disposition == .delivered)
            #expect(rig.google.state.withLock { $0.issued } == ["ya29.token-1", "ya29.token-2"])
            // The replacement served past its probation: refused later, it is replaced too.
            rig.clock.advance(by: FCMAccessTokens.replacementProbation)
            rig.google.state.withLock { _ = $0.revoked.insert("ya29.token-2") }
            #expect(await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens).disposition == .retryNow)
            // A replacement refused as soon as it is earned: the credentials are wrong,
            // and no other token is tried.
            rig.google.state.withLock { _ = $0.revoked.insert("ya29.token-3") }
            let wrong = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            #expect(wrong.disposition == .credentialsRejected)
            #expect(wrong.attempts == 1)
            #expect(wrong.response?.errorCode == "UNAUTHENTICATED")
            #expect(rig.google.state.withLock { $0.issued.count } == 3)
        }
    }

    @Test func concurrentRefusalsOfOneTokenEarnOneReplacement() async throws {
        try await FCMRig.with { rig in
            _ = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            rig.google.state.withLock { _ = $0.revoked.insert("ya29.token-1") }
            // Messages in flight with the refused token: each may go again at once,
            // and goes again (as the delivery policy sends them) with the one
            // replacement, fetched once for all.
            for round in 0..<2 {
                let results = await withTaskGroup(of: FCMResult.self) { group in
                    for _ in 0..<6 {
                        group.addTask { await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens) }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                #expect(results.allSatisfy { $0.disposition == (round == 0 ? .retryNow : .delivered) }, "\(results.map(\.disposition))")
            }
            #expect(rig.google.state.withLock { $0.issued } == ["ya29.token-1", "ya29.token-2"])
        }
    }

    @Test func aThirdPartyAuthErrorKeepsTheAccessToken() async throws {
        try await FCMRig.with { rig in
            _ = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            let body = #"{"error":{"code":401,"message":"Auth error from APNS or Web Push Service","status":"UNAUTHENTICATED","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"THIRD_PARTY_AUTH_ERROR"}]}}"#
            rig.google.state.withLock { $0.script = [(401, body, [])] }
            let refused = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            #expect(refused.disposition == .credentialsRejected)
            #expect(refused.response?.errorCode == "THIRD_PARTY_AUTH_ERROR")
            // Not about our token: it is kept.
            #expect(await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens).disposition == .delivered)
            #expect(rig.google.state.withLock { $0.issued.count } == 1)
        }
    }

    @Test func aRefusedAssertionRefusesTheCredentials() async throws {
        try await FCMRig.with { rig in
            // Another key than the one the endpoint knows for the account.
            var wrong = rig.account
            wrong.privateKeyPEM = try RSA.SigningKey.generate().pemRepresentation
            let tokens = try FCMAccessTokens(account: wrong, exchange: CurlTokenExchange(client: rig.http), clock: rig.clock)
            let result = await rig.client.send(FCMRig.message, account: wrong, tokens: tokens)
            #expect(result.disposition == .credentialsRejected)
            #expect(result.attempts == 0)
            #expect(result.error?.contains("invalid_grant") == true, "\(result.error ?? "")")
            #expect(rig.google.state.withLock { $0.refusedAssertions } == 1)
            // Out of reach is a passing fault.
            var away = rig.account
            away.tokenURI = "https://127.0.0.1:1/token"
            let unreachable = try FCMAccessTokens(account: away, exchange: CurlTokenExchange(client: rig.http), clock: rig.clock)
            #expect(await rig.client.send(FCMRig.message, account: away, tokens: unreachable).disposition == .retry)
        }
    }

    @Test func aRefusalOfTheTokenEndpointIsAnsweredNotKept() async throws {
        try await FCMRig.with { rig in
            // Refused once (a clock set wrong, say), then the endpoint issues tokens again.
            rig.google.state.withLock { $0.tokenScript = [400] }
            let first = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            #expect(first.disposition == .credentialsRejected)
            #expect(first.attempts == 0)
            #expect(first.tokenFailure?.status == 400)
            #expect(await rig.tokens.exchanges == 1)
            #expect(rig.google.state.withLock { $0.sends.isEmpty })
            // The tokens remember nothing of it (the transport's RefusedCredentials
            // holds it): the next send asks again, and goes.
            let again = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            #expect(again.disposition == .delivered, "\(again.error ?? "")")
            #expect(await rig.tokens.exchanges == 2)
        }
    }

    @Test func fcmsAnswersBecomeDispositions() async throws {
        try await FCMRig.with { rig in
            let unregistered = #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#
            let quota = #"{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"QUOTA_EXCEEDED"}]}}"#
            let badToken = #"{"error":{"code":400,"message":"The registration token is not a valid FCM registration token","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"},{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","description":"Invalid registration token"}]}]}}"#
            let badData = #"{"error":{"code":400,"message":"Invalid value at 'message.data[0].value'","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.data[0].value","description":"Invalid value"}]}]}}"#
            let mismatch = #"{"error":{"code":403,"message":"SenderId mismatch","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"SENDER_ID_MISMATCH"}]}}"#
            let unavailable = #"{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}"#
            let internalError = #"{"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}"#
            rig.google.state.withLock {
                $0.script = [
                    (404, unregistered, []), (429, quota, [("retry-after", "120")]), (429, quota, []), (400, badToken, []),
                    (400, badData, []), (403, mismatch, []), (503, unavailable, [("retry-after", "7")]), (503, unavailable, []),
                    (500, internalError, []),
                ]
            }
            var dispositions: [TransportDisposition] = []
            var codes: [String?] = []
            for _ in 0..<9 {
                let result = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
                dispositions.append(result.disposition)
                codes.append(result.response?.errorCode)
            }
            #expect(dispositions == [
                .tokenDead(since: nil), .retryLater(after: 120), .retryLater(after: 60), .tokenDead(since: nil), .rejected,
                .credentialsRejected, .retryLater(after: 7), .retry, .retry,
            ])
            #expect(codes == [
                "UNREGISTERED", "QUOTA_EXCEEDED", "QUOTA_EXCEEDED", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "SENDER_ID_MISMATCH",
                "UNAVAILABLE", "UNAVAILABLE", "INTERNAL",
            ])
        }
    }

    @Test func aThrottledOrFailingTokenEndpointIsAPassingFault() async throws {
        try await FCMRig.with { rig in
            rig.google.state.withLock { $0.tokenScript = [429, 503] }
            #expect(await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens).disposition == .retry)
            #expect(await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens).disposition == .retry)
            #expect(await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens).disposition == .delivered)
        }
    }

    @Test func aBare404SaysNothingAboutTheToken() async throws {
        try await FCMRig.with { rig in
            rig.google.state.withLock { $0.script = [(404, "<html>Not Found</html>", [])] }
            let result = await rig.client.send(FCMRig.message, account: rig.account, tokens: rig.tokens)
            #expect(result.disposition == .rejected)
            #expect(result.response?.errorCode == nil)
        }
    }
}
