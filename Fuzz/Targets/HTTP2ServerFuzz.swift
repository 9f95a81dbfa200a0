import Foundation
import HTTP2
#if canImport(Glibc)
import Glibc
#endif

/// Raw bytes to a cleartext (h2c) HTTP/2 server after the client preface, over a real
/// loopback socket. One server serves every input; each input is one connection that
/// writes the preface and the bytes, half-closes, and reads until the server closes.
/// The server must close every connection it was given (no connection may stay open
/// after its peer is gone) and keep serving.
public enum HTTP2ServerFuzz {
    /// Echoes a request's path, fields and body back, as a small server would.
    final class Echo: HTTP2ServerDelegate {
        func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
            var headers = [(name: "x-path", value: request.path)]
            if let first = request.fields.pairs.first { headers.append((name: "x-first", value: first.value)) }
            return HTTP2ServerReply(HTTP2Response(status: 200, headers: headers, body: request.body))
        }
    }

    private struct Setup: @unchecked Sendable {
        let server: HTTP2Server
        let port: Int
    }

    private static let setup: Setup = {
        var configuration = HTTP2ServerConfiguration()
        configuration.tls = nil
        configuration.maxBodyBytes = 4096
        configuration.maxHeaderListBytes = 4096
        configuration.maxConcurrentStreams = 16
        configuration.idleTimeout = .seconds(5)
        let server = try! HTTP2Server(configuration: configuration, delegate: Echo())
        let port = try! server.start()
        return Setup(server: server, port: port)
    }()

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    public static func run(_ bytes: UnsafeRawBufferPointer) {
        let setup = self.setup
        let fd = FuzzSocket.connect(port: setup.port)
        defer { close(fd) }
        var input = preface
        input.append(contentsOf: bytes)
        FuzzSocket.writeAll(fd, input)
        shutdown(fd, Int32(SHUT_WR))
        // The server answers what it can, then closes once it has read our end.
        guard FuzzSocket.readToEnd(fd, timeout: 5) else {
            fatalError("the server kept the connection open 5 s after its peer closed")
        }
        // The connection is gone from the server's table soon after.
        let deadline = ContinuousClock.now + .seconds(5)
        while setup.server.openConnections > 0 {
            guard ContinuousClock.now < deadline else { fatalError("the server still holds a closed connection after 5 s") }
            usleep(100)
        }
    }
}

/// Blocking loopback sockets for the fuzz targets.
enum FuzzSocket {
    static func connect(port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0, "socket: \(errno)")
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        precondition(result == 0, "connect: \(errno)")
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// Writes everything, or stops when the peer has gone (a server may close early
    /// on bytes it refuses).
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 {
                if written < 0 && errno == EINTR { continue }
                return
            }
            offset += written
        }
    }

    /// Reads until the peer closes (or resets); `false` when `timeout` seconds pass first.
    @discardableResult
    static func readToEnd(_ fd: Int32, timeout: Int) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        let deadline = ContinuousClock.now + .seconds(timeout)
        while true {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { return false }
            let milliseconds = Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
            let ready = poll(&poller, 1, max(1, milliseconds))
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return true }
        }
    }

    /// Reads what is there within `milliseconds`, appending it to `into`; `false` once the peer closed.
    static func readSome(_ fd: Int32, into: inout [UInt8], milliseconds: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, milliseconds)
        guard ready > 0 else { return true }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 { return false }
        into.append(contentsOf: buffer[..<count])
        return true
    }
}
