import Foundation
import HTTPServer
import IsletCrypto
import Storage

/// `Idempotency-Key` on the send routes: the first answer is stored in the same
/// transaction as the pushes it queued, so a retried request either replays it
/// (`Idempotent-Replayed: true`, nothing sent again) or, with another body, is
/// refused.
enum Idempotency {
    static let header = "Idempotency-Key"

    /// The key of `request`, checked: 1 to 255 visible ASCII characters.
    static func key(_ request: HTTPRequest) throws(Problem) -> String? {
        guard let key = request.headers[header] else { return nil }
        guard TextFormat.idempotencyKey.problem(key) == nil else {
            throw Problem(
                status: 422, detail: "The Idempotency-Key header must be 1 to 255 visible ASCII characters.",
                errors: [.init(field: header, message: "must be 1 to 255 visible ASCII characters")])
        }
        return key
    }

    /// What identifies a request's content: method, path and body.
    static func requestHash(_ request: HTTPRequest) -> Data {
        var bytes = Data("\(request.method) \(request.path)\n".utf8)
        bytes.append(request.body)
        return Digest.sha256(bytes)
    }

    /// Runs `work` in one write transaction, behind the request's idempotency key
    /// when it has one. `work` answers the status and JSON body; a thrown problem
    /// rolls everything back and is not remembered.
    static func perform(
        _ request: HTTPRequest, appID: String, context: ServerContext,
        _ work: @escaping @Sendable (any StoreSession, Date) throws -> (status: Int, body: Data)
    ) async throws -> HTTPResponse {
        let key = try key(request)
        let hash = requestHash(request)
        let now = context.clock.now()
        let since = now.addingTimeInterval(-context.idempotencyWindow)
        let (status, body, replayed) = try await context.store.write { session -> (Int, Data, Bool) in
            if let key, let earlier = try session.idempotentAnswer(appID: appID, key: key, since: since) {
                guard earlier.requestHash == hash else {
                    throw Problem(
                        status: 422,
                        detail: "The Idempotency-Key \(key) was used with a different request; use a new key for a new request.",
                        errors: [.init(field: header, message: "was used with a different request")])
                }
                return (earlier.status, earlier.body, true)
            }
            let (status, body) = try work(session, now)
            if let key {
                try session.saveIdempotentAnswer(
                    appID: appID, key: key, IdempotentAnswer(requestHash: hash, status: status, body: body, createdAt: now),
                    replacingBefore: since)
            }
            return (status, body, false)
        }
        var response = HTTPResponse(status: status, contentType: "application/json", body: body)
        if replayed {
            response.headers.set("Idempotent-Replayed", "true")
        } else if (200..<300).contains(status) {
            context.delivery.wake()
        }
        return response
    }
}
