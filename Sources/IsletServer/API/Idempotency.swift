import Foundation
import HTTPServer
import IsletCrypto
import IsletService

/// `Idempotency-Key` on the send routes: the key goes to the service with a
/// fingerprint of the request (method, path and body); a replayed answer says so in
/// `Idempotent-Replayed: true`.
enum IdempotencyHeader {
    /// The key and fingerprint of `request`, when it has the header (the service
    /// checks the key's form).
    static func key(_ request: HTTPRequest) -> IdempotencyKey? {
        guard let key = request.headers[IdempotencyKey.field] else { return nil }
        return IdempotencyKey(key: key, fingerprint: requestHash(request))
    }

    /// What identifies a request's content: method, path and body.
    static func requestHash(_ request: HTTPRequest) -> Data {
        var bytes = Data("\(request.method) \(request.path)\n".utf8)
        bytes.append(request.body)
        return Digest.sha256(bytes)
    }

    /// The answer to a send: `status` with the result, marked when it was replayed.
    static func response<Result: ReplayableResult>(_ answer: Replayable<Result>, status: Int) -> HTTPResponse {
        var response = APIJSON.response(status: status, answer.result.json)
        if answer.replayed { response.headers.set("Idempotent-Replayed", "true") }
        return response
    }
}
