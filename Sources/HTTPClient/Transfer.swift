import IsletSync
internal import CCurl
import Foundation
import HTTPTypes
import IsletCore

/// One request's life on the loop thread: what to send, what has come back, and
/// the continuation its caller waits on, resumed exactly once.
///
/// `@unchecked Sendable`: a transfer is made by `send` and handed to the loop thread
/// through the inbox lock; from then on only that thread touches it (libcurl calls
/// the callbacks below on the thread that runs `curl_multi_perform`).
final class Transfer: @unchecked Sendable {
    let request: OutboundRequest
    private var continuation: CheckedContinuation<Result<OutboundResponse, OutboundFailure>, Never>?
    /// The time since the transfer was made, on the client's clock.
    private let elapsed: @Sendable () -> Duration
    /// The easy handle while the transfer runs.
    var easy: EasyHandle?
    /// The request's header lines, which libcurl reads without copying.
    private var headerList: HeaderList?
    /// Response header fields by lower-case name, since the last status line.
    private var headers = HTTPHeaders()
    private var body = Data()
    /// Why the address libcurl was about to connect to was refused, when it was.
    private var refusal: String?
    private let allowPrivateAddresses: Bool

    init(
        request: OutboundRequest, allowPrivateAddresses: Bool, clock: any Clock<Duration>,
        continuation: CheckedContinuation<Result<OutboundResponse, OutboundFailure>, Never>
    ) {
        self.request = request
        self.elapsed = clock.stopwatch()
        self.allowPrivateAddresses = allowPrivateAddresses
        self.continuation = continuation
    }

    /// Resumes the caller with `result`, the first time only.
    func complete(_ result: Result<OutboundResponse, OutboundFailure>) {
        guard let continuation else { return }
        self.continuation = nil
        headerList = nil
        continuation.resume(returning: result)
    }

    // MARK: Setting up

    /// Sets every option of the request on `easy`, just reset; nil, or the failure
    /// that stops it from being sent.
    func configure(_ easy: EasyHandle, configuration: HTTPClientConfiguration) -> OutboundFailure? {
        let handle = easy.pointer
        let context = Unmanaged.passUnretained(self).toOpaque()
        var failed: CURLcode?
        func check(_ code: CURLcode) {
            if code != CURLE_OK && failed == nil { failed = code }
        }
        easy.errorBuffer[0] = 0
        check(islet_curl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, easy.errorBuffer))
        check(islet_curl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        // Only http and https; never a proxy from the environment (the address check
        // would then see the proxy's address); no redirects (the default, stated).
        check(islet_curl_easy_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        check(islet_curl_easy_setopt_string(handle, CURLOPT_PROXY, ""))
        check(islet_curl_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        check(islet_curl_easy_setopt_long(handle, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS))
        // Over HTTP/2, wait for a connection being set up to multiplex on rather than
        // open another.
        check(islet_curl_easy_setopt_long(handle, CURLOPT_PIPEWAIT, 1))
        check(islet_curl_easy_setopt_string(handle, CURLOPT_USERAGENT, configuration.userAgent))
        if let caFile = configuration.caFile {
            check(islet_curl_easy_setopt_string(handle, CURLOPT_CAINFO, caFile))
        }
        let timeout = max(1, request.timeout.milliseconds)
        check(islet_curl_easy_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeout))
        check(islet_curl_easy_setopt_long(
            handle, CURLOPT_CONNECTTIMEOUT_MS, min(timeout, max(1, configuration.connectTimeout.milliseconds))))
        check(islet_curl_easy_setopt_string(handle, CURLOPT_URL, request.url))

        check(islet_curl_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
            transfer.receiveBody(UnsafeRawPointer(data), count: size * count)
            return size * count
        })
        check(islet_curl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, context))
        check(islet_curl_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
            transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count))
            return size * count
        })
        check(islet_curl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, context))
        // The address check, on each address libcurl is about to connect to:
        // https://curl.se/libcurl/c/CURLOPT_OPENSOCKETFUNCTION.html
        check(islet_curl_easy_setopt_opensocket_callback(handle, CURLOPT_OPENSOCKETFUNCTION) { context, _, address in
            let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
            guard let address, transfer.admits(address) else { return ISLET_CURL_SOCKET_BAD }
            return islet_curl_open_socket(address)
        })
        check(islet_curl_easy_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, context))

        if let failure = setHeaders(handle) { return failure }
        if request.body.isEmpty {
            check(islet_curl_easy_setopt_long(handle, CURLOPT_HTTPGET, 1))
        } else {
            // The size first, so that libcurl copies exactly the body, zero bytes too.
            check(islet_curl_easy_setopt_long(handle, CURLOPT_POST, 1))
            check(islet_curl_easy_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)))
            request.body.withUnsafeBytes { bytes in
                check(islet_curl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress)))
            }
        }
        if let failed {
            return OutboundFailure(.other, "libcurl refused an option: \(CurlLibrary.text(failed))")
        }
        return nil
    }

    /// The caller's header lines, plus empty `Expect:` and `Content-Type:` lines
    /// unless the caller set those, which stop libcurl from adding its own
    /// (`100-continue`, a form type).
    private func setHeaders(_ handle: UnsafeMutableRawPointer) -> OutboundFailure? {
        let list = HeaderList()
        var named = Set<String>()
        for (name, value) in request.headers {
            let forbidden: (UInt8) -> Bool = { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
            guard !name.isEmpty, !name.utf8.contains(where: { forbidden($0) || $0 == 0x3A || $0 == 0x20 }),
                !value.utf8.contains(where: forbidden)
            else {
                return OutboundFailure(.invalidRequest, "header field \(name.debugDescription) has a forbidden character")
            }
            named.insert(name.lowercased())
            // "Name;" sends a field with an empty value; "Name:" would remove it.
            guard list.append(value.isEmpty ? "\(name);" : "\(name): \(value)") else {
                return OutboundFailure(.other, "out of memory for header fields")
            }
        }
        for name in ["Expect", "Content-Type"] where !named.contains(name.lowercased()) {
            guard list.append("\(name):") else { return OutboundFailure(.other, "out of memory for header fields") }
        }
        headerList = list
        _ = islet_curl_easy_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list.pointer))
        return nil
    }

    // MARK: Callbacks, on the loop thread

    /// Whether libcurl may connect to `address`; records the reason when not.
    private func admits(_ address: UnsafeMutablePointer<curl_sockaddr>) -> Bool {
        let parsed = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { buffer -> NetworkAddress? in
            let count = Int(islet_curl_sockaddr_ip(address, buffer.baseAddress!))
            return NetworkAddress(bytes: UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
        guard let parsed else {
            if allowPrivateAddresses { return true }
            refusal = "the connection is not to an IP address"
            return false
        }
        guard let reason = parsed.refusalReason(allowPrivate: allowPrivateAddresses) else { return true }
        refusal = reason
        return false
    }

    private func receiveBody(_ data: UnsafeRawPointer?, count: Int) {
        let room = OutboundResponse.maxBodyBytes - body.count
        guard room > 0, let data, count > 0 else { return }
        body.append(data.assumingMemoryBound(to: UInt8.self), count: min(room, count))
    }

    /// One header line as libcurl hands it over, CRLF included; a status line starts
    /// the fields afresh (after a 100 Continue or 103 Early Hints).
    private func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        var line = Substring(String(decoding: bytes, as: UTF8.self))
        while let last = line.last, last == "\r\n" || last == "\n" || last == "\r" { line.removeLast() }
        guard !line.isEmpty else { return }
        if line.hasPrefix("HTTP/") {
            headers.removeAll()
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = String(line[line.index(after: colon)...].trimmingOptionalWhitespace())
        headers.add(name, value)
    }

    // MARK: Finishing

    /// The outcome of the transfer libcurl finished with `code`.
    func outcome(_ code: CURLcode) -> Result<OutboundResponse, OutboundFailure> {
        guard let easy else { return .failure(OutboundFailure(.other, "the transfer had no handle")) }
        guard code == CURLE_OK else {
            // A refused address fails the connect; another of the host's addresses
            // may have been tried and failed too, but the refusal is the reason.
            if let refusal { return .failure(OutboundFailure(.refusedAddress, refusal)) }
            let message = easy.errorMessage ?? CurlLibrary.text(code)
            return .failure(OutboundFailure(Self.kind(of: code), message))
        }
        var status = 0
        _ = islet_curl_easy_getinfo_long(easy.pointer, CURLINFO_RESPONSE_CODE, &status)
        return .success(OutboundResponse(
            status: status, headers: headers, body: body, duration: elapsed()))
    }

    /// The failure kind of a libcurl result code.
    private static func kind(of code: CURLcode) -> OutboundFailure.Kind {
        switch code {
        case CURLE_OPERATION_TIMEDOUT: .timeout
        case CURLE_COULDNT_CONNECT: .connect
        case CURLE_COULDNT_RESOLVE_HOST: .resolve
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL: .invalidRequest
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE, CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED,
            CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED:
            .tls
        default: .other
        }
    }
}

extension Duration {
    /// The duration in whole milliseconds, as libcurl's `_MS` options take it.
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
