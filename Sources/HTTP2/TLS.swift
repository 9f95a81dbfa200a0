internal import COpenSSL
import Foundation
import Glibc

/// TLS settings of a client.
public struct TLSClientConfiguration: Sendable {
    /// PEM certificates to trust instead of the system's roots (for a simulator's
    /// self-made CA, say); `nil` trusts the system's roots.
    public var trustRootsPEM: String?
    /// The name sent in SNI and checked against the certificate; defaults to the host.
    public var serverName: String?
    /// Whether to verify the peer's certificate. Only tests should turn this off.
    public var verifyPeer = true
    /// Whether to offer `h2` by ALPN. Without it the client speaks HTTP/2 with prior
    /// knowledge, as some APNs clients do.
    public var offerALPN = true

    /// System roots, verification on.
    public init(trustRootsPEM: String? = nil, serverName: String? = nil) {
        self.trustRootsPEM = trustRootsPEM
        self.serverName = serverName
    }
}

/// TLS settings of a server.
public struct TLSServerConfiguration: Sendable {
    /// The certificate chain in PEM, leaf first.
    public var certificateChainPEM: String
    /// The private key in PEM.
    public var privateKeyPEM: String

    /// Creates a configuration.
    public init(certificateChainPEM: String, privateKeyPEM: String) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
    }
}

/// An OpenSSL `SSL_CTX`, configured once and shared by every connection.
///
/// `@unchecked Sendable`: it is never changed after `init`, and OpenSSL allows one
/// configured context to create sessions from many threads.
final class TLSContext: @unchecked Sendable {
    let pointer: OpaquePointer
    let isServer: Bool

    private init(pointer: OpaquePointer, isServer: Bool) {
        self.pointer = pointer
        self.isServer = isServer
    }

    deinit { SSL_CTX_free(pointer) }

    static func client(_ configuration: TLSClientConfiguration) throws(HTTP2Error) -> TLSContext {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw HTTP2Error(.invalidConfiguration, "cannot create a TLS context: \(tlsErrors())")
        }
        let tls = TLSContext(pointer: context, isServer: false)
        try tls.common()
        if configuration.offerALPN {
            var alpn: [UInt8] = [2, 0x68, 0x32]  // "h2"
            SSL_CTX_set_alpn_protos(context, &alpn, UInt32(alpn.count))
        }
        if configuration.verifyPeer {
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            if let roots = configuration.trustRootsPEM {
                let store = SSL_CTX_get_cert_store(context)
                let certificates = try readCertificates(roots)
                guard !certificates.isEmpty else { throw HTTP2Error(.invalidConfiguration, "the trust roots hold no PEM certificate") }
                for certificate in certificates {
                    X509_STORE_add_cert(store, certificate)
                    X509_free(certificate)
                }
            } else if SSL_CTX_set_default_verify_paths(context) != 1 {
                throw HTTP2Error(.invalidConfiguration, "cannot load the system's trust roots: \(tlsErrors())")
            }
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
        return tls
    }

    static func server(_ configuration: TLSServerConfiguration) throws(HTTP2Error) -> TLSContext {
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw HTTP2Error(.invalidConfiguration, "cannot create a TLS context: \(tlsErrors())")
        }
        let tls = TLSContext(pointer: context, isServer: true)
        try tls.common()
        let chain = try readCertificates(configuration.certificateChainPEM)
        guard let leaf = chain.first else { throw HTTP2Error(.invalidConfiguration, "the certificate file holds no PEM certificate") }
        defer { X509_free(leaf) }
        guard SSL_CTX_use_certificate(context, leaf) == 1 else {
            throw HTTP2Error(.invalidConfiguration, "the certificate cannot be used: \(tlsErrors())")
        }
        for extra in chain.dropFirst() {
            // On success the context takes ownership of `extra`.
            if islet_ssl_ctx_add_chain_cert(context, extra) != 1 { X509_free(extra) }
        }
        let key: OpaquePointer? = withBIO(configuration.privateKeyPEM) { PEM_read_bio_PrivateKey($0, nil, nil, nil) }
        guard let key else { throw HTTP2Error(.invalidConfiguration, "the private key is not a PEM key: \(tlsErrors())") }
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(context, key) == 1, SSL_CTX_check_private_key(context) == 1 else {
            throw HTTP2Error(.invalidConfiguration, "the private key does not match the certificate: \(tlsErrors())")
        }
        islet_ssl_ctx_select_h2(context)
        return tls
    }

    private func common() throws(HTTP2Error) {
        guard islet_ssl_ctx_require_tls12(pointer) == 1 else {
            throw HTTP2Error(.invalidConfiguration, "cannot require TLS 1.2: \(tlsErrors())")
        }
        _ = islet_ssl_ctx_set_nonblocking_modes(pointer)
        // HTTP/2 forbids renegotiation and compression (RFC 9113 §9.2).
        islet_ssl_ctx_http2_options(pointer)
    }

    private static func readCertificates(_ pem: String) throws(HTTP2Error) -> [OpaquePointer] {
        withBIO(pem) { bio in
            var certificates: [OpaquePointer] = []
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                certificates.append(certificate)
            }
            ERR_clear_error()  // the loop ends on a "no start line" error
            return certificates
        }
    }

    private static func withBIO<T>(_ text: String, _ body: (OpaquePointer) -> T) -> T {
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBytes { raw in
            let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count))!
            defer { BIO_free(bio) }
            return body(bio)
        }
    }
}

/// OpenSSL's queued errors as one line; clears the queue.
func tlsErrors() -> String {
    var messages: [String] = []
    while case let code = ERR_get_error(), code != 0 {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return messages.isEmpty ? "no detail" : messages.joined(separator: "; ")
}

/// The outcome of one non-blocking I/O step.
enum IOStep {
    case done(Int)
    case wantRead
    case wantWrite
    case closed
    case failed(String)
}

/// A byte stream over a socket: plain, or TLS through OpenSSL. Confined to one event
/// loop thread.
final class Transport {
    let fd: Int32
    private let ssl: OpaquePointer?

    /// A plaintext transport.
    init(fd: Int32) {
        self.fd = fd
        self.ssl = nil
    }

    /// A TLS transport; `serverName` is sent as SNI and verified (clients only).
    init(fd: Int32, context: TLSContext, serverName: String?, verify: Bool) throws(HTTP2Error) {
        self.fd = fd
        guard let ssl = SSL_new(context.pointer) else { throw HTTP2Error(.tlsFailed, "cannot create a TLS session: \(tlsErrors())") }
        self.ssl = ssl
        SSL_set_fd(ssl, fd)
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let serverName {
                if isNumericAddress(serverName) {
                    if verify { X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName) }
                } else {
                    _ = islet_ssl_set_host_name(ssl, serverName)
                    if verify { SSL_set1_host(ssl, serverName) }
                }
            }
        }
    }

    deinit {
        if let ssl { SSL_free(ssl) }
        close(fd)
    }

    var isTLS: Bool { ssl != nil }

    /// Drives the TLS handshake; `.done(0)` when it is complete (at once for plaintext).
    func handshake() -> IOStep {
        guard let ssl else { return .done(0) }
        let rc = SSL_do_handshake(ssl)
        if rc == 1 { return .done(0) }
        return classify(rc, during: "TLS handshake")
    }

    /// The ALPN protocol agreed, if any.
    var negotiatedProtocol: String? {
        guard let ssl else { return nil }
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    func read(_ buffer: UnsafeMutableRawBufferPointer) -> IOStep {
        if let ssl {
            var count = 0
            let rc = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
            if rc == 1 { return .done(count) }
            return classify(0, during: "TLS read")
        }
        let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
        if n > 0 { return .done(n) }
        if n == 0 { return .closed }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return .wantRead }
        return .failed(String(cString: strerror(errno)))
    }

    func write(_ buffer: UnsafeRawBufferPointer) -> IOStep {
        if let ssl {
            var count = 0
            let rc = SSL_write_ex(ssl, buffer.baseAddress, buffer.count, &count)
            if rc == 1 { return .done(count) }
            return classify(0, during: "TLS write")
        }
        let n = send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
        if n >= 0 { return .done(n) }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return .wantWrite }
        return .failed(String(cString: strerror(errno)))
    }

    private func classify(_ rc: Int32, during what: String) -> IOStep {
        let error = SSL_get_error(ssl, rc)
        switch error {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            let reason = errno == 0 ? "connection closed" : String(cString: strerror(errno))
            ERR_clear_error()
            return errno == 0 ? .closed : .failed("\(what): \(reason)")
        default:
            let detail = tlsErrors()
            if let ssl, SSL_get_verify_result(ssl) != X509_V_OK {
                // A sentence, without OpenSSL's error codes: the usual case is a
                // server whose CA the client was not given.
                let why = String(cString: X509_verify_cert_error_string(SSL_get_verify_result(ssl)))
                return .failed("the server's certificate is not trusted (\(why))")
            }
            return .failed("\(what): \(detail)")
        }
    }
}

/// Whether `text` is a numeric IPv4 or IPv6 address.
private func isNumericAddress(_ text: String) -> Bool {
    var v4 = in_addr()
    var v6 = in6_addr()
    return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
}
