import Foundation
import HTTPClient
import IsletCore
import IsletService
import IsletSync

/// Webhook POSTs over libcurl (`HTTPClient`): kept-alive connections, the address
/// checked again on every connection, the answer's status and `Retry-After`.
struct CurlWebhookTransport: WebhookTransport {
    let client: HTTPClient
    /// The clock a failed attempt's time is measured on (a response's is the client's).
    var clock: any Clock<Duration> = ContinuousClock()

    func post(_ request: WebhookRequest) async -> (reply: WebhookReply, duration: Duration) {
        let elapsed = clock.stopwatch()
        let outbound = OutboundRequest(
            url: request.url, headers: HTTPHeaders(request.headers), body: request.body, timeout: request.timeout)
        switch await client.send(outbound) {
        case .success(let response):
            return (.answered(status: response.status, retryAfter: response.headers["retry-after"]), response.duration)
        case .failure(let failure):
            return (.failed(reason: "\(failure.kind): \(failure.message)"), elapsed())
        }
    }

    /// Why a webhook's `host` may not be saved: a numeric address in a refused range,
    /// a name that does not resolve, or one that resolves to a refused address. The
    /// lookup runs on a thread of its own (it may block for seconds).
    static func addressRefusal(host: String, port: Int) async -> String? {
        if let literal = NetworkAddress(host) { return literal.refusalReason(allowPrivate: false) }
        return await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let thread = Thread {
                do {
                    var refusal: String?
                    for text in try HTTPClient.resolve(host: host, port: port) {
                        if let reason = NetworkAddress(text)?.refusalReason(allowPrivate: false) {
                            refusal = "\(host) resolves to \(reason)"
                            break
                        }
                    }
                    continuation.resume(returning: refusal)
                } catch {
                    continuation.resume(returning: (error as? OutboundFailure)?.message ?? "\(host) does not resolve")
                }
            }
            thread.name = "islet-resolve"
            thread.start()
        }
    }
}
