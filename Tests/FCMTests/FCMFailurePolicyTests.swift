import FCM
import Foundation
import IsletCore
import Testing

/// Every branch of the one map from FCM's answers to the neutral dispositions, the
/// access token's replacement included (reachable now that the client reports it).
@Suite("FCM failure policy: every answer's disposition")
struct FCMFailurePolicyTests {
    static func answer(_ status: Int, _ code: String? = nil, tokenInvalid: Bool = false, retryAfter: TimeInterval? = nil) -> FCMResponse {
        FCMResponse(status: status, errorCode: code, tokenInvalid: tokenInvalid, retryAfter: retryAfter)
    }

    @Test func eachAnswerHasItsDisposition() {
        let cases: [(FCMResponse, Bool, TransportDisposition)] = [
            (Self.answer(200), false, .delivered),
            (Self.answer(404, "UNREGISTERED"), false, .tokenDead(since: nil)),
            (Self.answer(400, "INVALID_ARGUMENT", tokenInvalid: true), false, .tokenDead(since: nil)),
            (Self.answer(400, "INVALID_ARGUMENT"), false, .rejected),
            (Self.answer(403, "SENDER_ID_MISMATCH"), false, .credentialsRejected),
            (Self.answer(401, "THIRD_PARTY_AUTH_ERROR"), true, .credentialsRejected),
            (Self.answer(403, "PERMISSION_DENIED"), false, .credentialsRejected),
            // A refused access token: at once with a new one, or refused for good.
            (Self.answer(401, "UNAUTHENTICATED"), true, .retryNow),
            (Self.answer(401, "UNAUTHENTICATED"), false, .credentialsRejected),
            (Self.answer(401), true, .retryNow),
            (Self.answer(401), false, .credentialsRejected),
            // Quota: never sooner than a minute, or than FCM asks.
            (Self.answer(429, "QUOTA_EXCEEDED", retryAfter: 5), false, .retryLater(after: 60)),
            (Self.answer(429, "RESOURCE_EXHAUSTED", retryAfter: 120), false, .retryLater(after: 120)),
            (Self.answer(429), false, .retryLater(after: 60)),
            (Self.answer(503, "UNAVAILABLE", retryAfter: 7), false, .retryLater(after: 7)),
            (Self.answer(503, "UNAVAILABLE"), false, .retry),
            (Self.answer(503, retryAfter: 0), false, .retryLater(after: 0)),
            (Self.answer(503), false, .retry),
            (Self.answer(500, "INTERNAL"), false, .retry),
            (Self.answer(502), false, .retry),
            // A 404 in Google's format names the token; a bare one says nothing of it.
            (Self.answer(404, "NOT_FOUND"), false, .tokenDead(since: nil)),
            (Self.answer(404), false, .rejected),
            (Self.answer(403), false, .credentialsRejected),
            (Self.answer(418), false, .rejected),
        ]
        for (response, refreshed, expected) in cases {
            #expect(FCMFailurePolicy.classify(response, tokenRefreshed: refreshed) == expected, "\(response) \(refreshed)")
        }
    }

    @Test func onlyA401AboutOurTokenRefusesTheAccessToken() {
        #expect(FCMFailurePolicy.refusesAccessToken(Self.answer(401, "UNAUTHENTICATED")))
        #expect(FCMFailurePolicy.refusesAccessToken(Self.answer(401)))
        #expect(!FCMFailurePolicy.refusesAccessToken(Self.answer(401, "THIRD_PARTY_AUTH_ERROR")))
        #expect(!FCMFailurePolicy.refusesAccessToken(Self.answer(403, "PERMISSION_DENIED")))
        #expect(!FCMFailurePolicy.refusesAccessToken(Self.answer(200)))
    }
}
