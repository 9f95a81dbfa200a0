import FCM
import Foundation
import HTTP2
import HTTPClient
import IsletCore
import IsletCrypto
import IsletTesting
import Simulators
import Testing

/// The FCM simulator's plain-HTTP/1.1 listener: the token endpoint and
/// `messages:send` answering as they do over HTTP/2 (Retry-After included), and the
/// inspection API beside them, kept from web pages as the APNs simulator's is.
@Suite("FCM simulator over HTTP/1.1: FCM's endpoints and the inspection API")
struct FCMSimulatorHTTP1Tests {
    struct Rig {
        let simulator: FCMSimulator
        let account: FCMServiceAccount
        let http: HTTPClient
        let tokens: FCMAccessTokens

        /// `POST path` with a JSON body over HTTP/1.1 (`authorized`: with a bearer token).
        func post(_ path: String, _ body: String? = nil, authorized: Bool = false, headers: [String: String] = [:]) async throws
            -> RawHTTPResponse
        {
            var fields = headers
            if body != nil && fields["Content-Type"] == nil { fields["Content-Type"] = "application/json" }
            if authorized { fields["Authorization"] = "Bearer \(try await tokens.token())" }
            return try await httpRequest(
                port: simulator.http1Port, method: "POST", path: path, headers: fields, body: body.map { Data($0.utf8) })
        }

        func get(_ path: String, headers: [String: String] = [:]) async throws -> JSONValue {
            let answer = try await httpRequest(port: simulator.http1Port, path: path, headers: headers)
            #expect(answer.status == 200, "\(path): \(answer.text)")
            return try JSONValue(parsing: answer.body)
        }
    }

    static let phone = "fcm-token-phone-0000000001"

    static func account(_ json: JSONValue) throws -> FCMServiceAccount {
        FCMServiceAccount(
            projectID: try #require(json["project_id"]?.stringValue), clientEmail: try #require(json["client_email"]?.stringValue),
            privateKeyPEM: try #require(json["private_key"]?.stringValue), privateKeyID: json["private_key_id"]?.stringValue,
            tokenURI: try #require(json["token_uri"]?.stringValue))
    }

    static func with(_ body: (Rig) async throws -> Void) async throws {
        let simulator = try FCMSimulator(random: SeededRandomSource(seed: 11))
        try simulator.start()
        var settings = HTTPClientConfiguration()
        settings.allowPrivateAddresses = true
        let http: HTTPClient
        do {
            http = try HTTPClient(configuration: settings)
        } catch {
            await simulator.shutdown()
            throw error
        }
        do {
            // An account whose token URI is the HTTP/1.1 listener's, as POST /accounts makes them.
            let account = try Self.account(try simulator.makeServiceAccount(projectID: "islet-h1", tokenURI: simulator.http1TokenURI))
            let tokens = try FCMAccessTokens(account: account, exchange: CurlTokenExchange(client: http))
            try await body(Rig(simulator: simulator, account: account, http: http, tokens: tokens))
        } catch {
            await http.shutdown()
            await simulator.shutdown()
            throw error
        }
        await http.shutdown()
        await simulator.shutdown()
    }

    @Test func theTokenEndpointAndMessagesSendAnswerOverHTTP1AsOverHTTP2() async throws {
        try await Self.with { rig in
            #expect(rig.simulator.http1URL == "http://127.0.0.1:\(rig.simulator.http1Port)")
            #expect(rig.simulator.http1TokenURI == rig.simulator.http1URL + "/token")
            // libcurl posts the assertion (audience http://127.0.0.1:port/token) as a form.
            let token = try await rig.tokens.token()
            #expect(token.hasPrefix("ya29.sim-"))
            let message = #"{"message":{"token":"\#(Self.phone)","data":{"islet_event":"start","islet_activity_id":"a1","islet_activity_type":"T","content_state":"{\"eta\":5}","timestamp":"7"},"android":{"priority":"high","ttl":"600s","collapse_key":"islet-a1"}}}"#
            let sent = try await rig.post("/v1/projects/islet-h1/messages:send", message, authorized: true)
            #expect(sent.status == 200, "\(sent.text)")
            #expect(try JSONValue(parsing: sent.body)["name"]?.stringValue?.hasPrefix("projects/islet-h1/messages/") == true)
            #expect(rig.simulator.engine.devices()[Self.phone]?.activities["a1"]?.contentState == ["eta": 5])

            // The same refusals, word for word, over both listeners.
            let h2 = try HTTP2Client(configuration: HTTP2ClientConfiguration(
                host: "127.0.0.1", port: rig.simulator.port, tls: TLSClientConfiguration(trustRootsPEM: rig.simulator.caCertificatePEM)))
            for (path, body) in [
                ("/v1/projects/islet-h1/messages:send", #"{"message":{"token":"\#(Self.phone)","data":{"eta":5}}}"#),
                ("/v1/projects/islet-h1/messages:send", #"{"message":{"token":"not a token!","data":{}}}"#),
                ("/v1/projects/another/messages:send", #"{"message":{"token":"\#(Self.phone)"}}"#),
                ("/v1/projects/islet-h1/nothing", "{}"),
            ] {
                let one = try await rig.post(path, body, authorized: true)
                let two = try await h2.send(HTTP2Request(
                    method: "POST", path: path,
                    headers: [("authorization", "Bearer \(try await rig.tokens.token())"), ("content-type", "application/json")],
                    body: Data(body.utf8)))
                #expect(one.status == two.status && one.status >= 400, "\(path) \(body)")
                #expect(try JSONValue(parsing: one.body) == JSONValue(parsing: two.body))
                #expect(one.headers["content-type"] == "application/json; charset=UTF-8")
            }
            await h2.shutdown()
            let unauthenticated = try await rig.post("/v1/projects/islet-h1/messages:send", message)
            #expect(unauthenticated.status == 401)
            let wrongMethod = try await httpRequest(port: rig.simulator.http1Port, path: "/token")
            #expect(wrongMethod.status == 405)
            #expect(try JSONValue(parsing: wrongMethod.body)["error"]?["status"] == "UNIMPLEMENTED")

            // A scripted fault with Retry-After, through the inspection API.
            let scripted = try await rig.post("/faults", #"{"fault":"QUOTA_EXCEEDED","retry_after":30}"#)
            #expect(scripted.status == 201)
            #expect(try JSONValue(parsing: scripted.body) == ["faults": [["fault": "QUOTA_EXCEEDED", "retry_after": 30]]])
            let throttled = try await rig.post("/v1/projects/islet-h1/messages:send", message, authorized: true)
            #expect(throttled.status == 429)
            #expect(throttled.headers["retry-after"] == "30")
            let details = try JSONValue(parsing: throttled.body)["error"]?["details"]?.arrayValue
            #expect(details?.first?["errorCode"] == "QUOTA_EXCEEDED")
            #expect(try await rig.get("/faults") == ["faults": []])
        }
    }

    @Test func theInspectionAPIShowsMessagesAndDevicesAndScriptsTheRest() async throws {
        try await Self.with { rig in
            #expect(try await rig.get("/healthz") == ["status": "ok"])
            let start = #"{"message":{"token":"\#(Self.phone)","data":{"islet_event":"start","islet_activity_id":"a1","islet_activity_type":"T","content_state":"{\"eta\":5}","attributes":"{\"order\":\"A1\"}","timestamp":"7"},"android":{"priority":"normal","ttl":"60s"}}}"#
            #expect(try await rig.post("/v1/projects/islet-h1/messages:send", start, authorized: true).status == 200)
            let messages = try await rig.get("/messages")
            #expect(messages == [
                "messages": [[
                    "sequence": 1, "status": 200, "error_code": nil, "token": .string(Self.phone),
                    "data": [
                        "islet_event": "start", "islet_activity_id": "a1", "islet_activity_type": "T", "content_state": #"{"eta":5}"#,
                        "attributes": #"{"order":"A1"}"#, "timestamp": "7",
                    ],
                    "android": ["priority": "normal", "ttl": "60s"], "device_note": "started a1",
                ]],
            ])
            #expect(try await rig.get("/messages?after=1") == ["messages": []])
            #expect(try await rig.get("/devices") == [
                "devices": [[
                    "token": .string(Self.phone), "project_id": "islet-h1",
                    "activities": [[
                        "activity_id": "a1", "activity_type": "T", "ended": false, "content_state": ["eta": 5],
                        "attributes": ["order": "A1"], "last_timestamp": 7, "updates": 0,
                    ]],
                ]],
            ])

            // A removed app: its token answers UNREGISTERED.
            #expect(try await rig.post("/unregister", #"{"token":"\#(Self.phone)"}"#).status == 204)
            let dead = try await rig.post("/v1/projects/islet-h1/messages:send", start, authorized: true)
            #expect(dead.status == 404)
            #expect(try await rig.get("/messages?after=1")["messages"]?.arrayValue?.first?["error_code"] == "UNREGISTERED")

            // A new account names this listener's token endpoint unless told otherwise, and sends.
            let made = try await rig.post("/accounts", #"{"project_id":"islet-second"}"#)
            #expect(made.status == 201)
            let second = try Self.account(try JSONValue(parsing: made.body))
            #expect(second.tokenURI == rig.simulator.http1TokenURI)
            #expect(second.clientEmail.hasSuffix("@islet-second.iam.gserviceaccount.com"))
            let secondTokens = try FCMAccessTokens(account: second, exchange: CurlTokenExchange(client: rig.http))
            #expect(try await secondTokens.token().hasPrefix("ya29.sim-"))
            let other = try Self.account(
                try JSONValue(parsing: try await rig.post("/accounts", #"{"token_uri":"\#(rig.simulator.tokenURI)"}"#).body))
            #expect(other.tokenURI == rig.simulator.tokenURI)
            #expect(other.projectID == "islet-demo")
            #expect(try await rig.post("/accounts").status == 201)

            // Reset forgets what happened; the accounts and their tokens stay.
            #expect(try await rig.post("/reset").status == 204)
            #expect(try await rig.get("/messages") == ["messages": []])
            #expect(try await rig.get("/devices") == ["devices": []])
            #expect(try await rig.post("/v1/projects/islet-h1/messages:send", start, authorized: true).status == 200)
        }
    }

    @Test(arguments: [
        ("/faults", #"{"fault":"TEAPOT"}"#, 422, "fault: one of UNREGISTERED, QUOTA_EXCEEDED"),
        ("/faults", #"{"fault":"UNAVAILABLE","count":0}"#, 422, "count: a whole number from 1 to 10000"),
        ("/faults", #"{"fault":"UNAVAILABLE","retry_after":-1}"#, 422, "retry_after: a whole number of seconds"),
        ("/faults", "[]", 400, "The body must be a JSON object"),
        ("/unregister", "{}", 422, "token: required"),
        ("/accounts", #"{"project_id":"a/b"}"#, 422, "project_id: \"a/b\" cannot name a project"),
        ("/accounts", #"{"client_email":"nobody"}"#, 422, "client_email: \"nobody\" is not an email address"),
        ("/accounts", #"{"token_uri":7}"#, 422, "token_uri: a string without spaces"),
        ("/nothing", "{}", 404, "There is no route /nothing."),
    ] as [(String, String, Int, String)])
    func badInspectionRequestsSayWhatIsWrong(path: String, body: String, status: Int, detail: String) async throws {
        try await Self.with { rig in
            let answer = try await rig.post(path, body)
            #expect(answer.status == status, "\(answer.text)")
            #expect(answer.headers["content-type"] == "application/problem+json")
            #expect(try JSONValue(parsing: answer.body)["detail"]?.stringValue?.hasPrefix(detail) == true, "\(answer.text)")
        }
    }

    @Test func webPagesAreKeptFromTheInspectionAPIButNotFromFCMsEndpoints() async throws {
        try await Self.with { rig in
            let foreign = try await rig.post("/faults", #"{"fault":"INTERNAL"}"#, headers: ["Origin": "https://evil.example"])
            #expect(foreign.status == 403)
            let form = try await rig.post("/reset", "x=1", headers: ["Content-Type": "application/x-www-form-urlencoded"])
            #expect(form.status == 415)
            // A page whose own name was made to point at 127.0.0.1.
            let port = rig.simulator.http1Port
            let rebound = try await RawHTTPConnection(port: port).async { connection in
                try connection.write("GET /messages HTTP/1.1\r\nHost: evil.example:\(port)\r\nConnection: close\r\n\r\n")
                return try connection.readResponse()
            }
            #expect(rebound.status == 403)
            #expect(rig.simulator.engine.pendingFaults().isEmpty)
            #expect(rig.simulator.engine.records().isEmpty)
            let wrongMethod = try await httpRequest(port: rig.simulator.http1Port, path: "/reset")
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.headers["allow"] == "POST")
            // The token endpoint takes a form, as Google's does (and answers in OAuth's words).
            let token = try await rig.post("/token", "grant_type=password", headers: ["Content-Type": "application/x-www-form-urlencoded"])
            #expect(token.status == 400)
            #expect(try JSONValue(parsing: token.body)["error"] == "unsupported_grant_type")
        }
    }

    @Test func shutdownStopsTheHTTP1Listener() async throws {
        let simulator = try FCMSimulator()
        try simulator.start()
        let port = simulator.http1Port
        #expect(try await httpRequest(port: port, path: "/healthz").status == 200)
        await simulator.shutdown()
        #expect(throws: (any Error).self) { _ = try RawHTTPConnection(port: port) }
    }
}

/// The engine's token endpoint, with no listener: which audiences it takes.
@Suite("FCM simulator engine: the assertion's audience")
struct FCMTokenAudienceTests {
    @Test(arguments: [
        ("http://127.0.0.1:9/token", 200),
        // google-auth names Google's endpoint whatever token_uri it posts to; Google takes it.
        ("https://oauth2.googleapis.com/token", 200),
        ("https://127.0.0.1:9/token", 400),
        ("https://example.com/token", 400),
    ] as [(String, Int)])
    func theAudienceIsThisEndpointOrGooglesOwn(audience: String, status: Int) throws {
        let clock = ManualWallClock(start: Date(timeIntervalSince1970: 1_800_000_000))
        let engine = FCMSimulatorEngine(clock: clock)
        let key = try RSA.SigningKey.generate()
        engine.trust(FCMTrustedAccount(clientEmail: "a@p.iam.gserviceaccount.com", projectID: "p", publicKey: key.publicKey))
        let now = Int64(clock.now().timeIntervalSince1970)
        let assertion = try JSONWebToken.signRS256(
            keyID: nil,
            claims: [
                "iss": .string("a@p.iam.gserviceaccount.com"), "scope": .string("https://www.googleapis.com/auth/cloud-platform"),
                "aud": .string(audience), "iat": .integer(now), "exp": .integer(now + 3600),
            ],
            key: key)
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let answer = engine.handleToken(form: Data(form.utf8), tokenURI: "http://127.0.0.1:9/token")
        #expect(answer.status == status, "\(answer.body)")
        if status != 200 { #expect(answer.body.contains("Failed audience check")) }
    }
}
