import Foundation
import IsletCore

/// An outbound HTTP/1.1 and HTTP/2 client over libcurl's multi interface, for
/// webhook deliveries.
///
/// One thread of its own (`islet-http-out`) owns libcurl's handles and runs every
/// request; callers wait without blocking a thread. Connections are kept alive and
/// reused across requests, up to ``HTTPClientConfiguration/maxConnectionsPerHost``
/// per host. Redirects are not followed. Each address libcurl is about to connect
/// to is checked first (`NetworkAddress`): unless
/// ``HTTPClientConfiguration/allowPrivateAddresses`` is set, a host that is or
/// resolves to a loopback, private, link-local, metadata or otherwise non-public
/// address fails with ``OutboundFailure/Kind/refusedAddress`` and nothing is sent,
/// however the name resolved when it was saved.
public final class HTTPClient: Sendable {
    /// The configuration it was made with.
    public let configuration: HTTPClientConfiguration
    private let loop: TransferLoop
    private let inbox: TransferInbox

    /// Starts a client and its thread.
    public init(configuration: HTTPClientConfiguration) throws(OutboundFailure) {
        self.configuration = configuration
        loop = try TransferLoop(configuration: configuration)
        inbox = loop.inbox
        loop.start()
    }

    /// Sends `request` (a POST when it has a body, otherwise a GET) and answers its
    /// response, whatever the status, or why there was none.
    public func send(_ request: OutboundRequest) async -> Result<OutboundResponse, OutboundFailure> {
        await withCheckedContinuation { continuation in
            let transfer = Transfer(
                request: request, allowPrivateAddresses: configuration.allowPrivateAddresses, clock: configuration.clock,
                continuation: continuation)
            if !inbox.submit(transfer) {
                transfer.complete(.failure(OutboundFailure(.shutDown, "the HTTP client has shut down")))
            }
        }
    }

    /// Fails every request not yet answered with ``OutboundFailure/Kind/shutDown``,
    /// closes the connections and waits for the client's thread to finish. Requests
    /// sent afterwards fail at once. Calling it again does nothing.
    public func shutdown() async {
        await inbox.stopAndWait()
    }

    /// A client released without `shutdown` stops its thread, without waiting.
    deinit {
        inbox.requestStop()
    }
}
