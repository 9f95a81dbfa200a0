public import Foundation
import IsletThreads
import Glibc

/// An HTTP/1.1 response as read off the wire.
public struct RawHTTPResponse: Sendable {
    /// The status code.
    public let status: Int
    /// Header fields, names lowercased (last one wins).
    public let headers: [String: String]
    /// The body.
    public let body: Data

    /// The body parsed as a JSON object, when it is one.
    public var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    }

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// A failure of the test client.
public struct RawHTTPError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A blocking HTTP/1.1 client over a plain TCP socket, for tests that must control
/// exactly what goes on the wire (split bodies, pauses, keep-alive). Its async methods
/// run the blocking calls on threads of their own, never on the concurrency pool, so
/// a server under test in the same process keeps its threads.
public final class RawHTTPConnection: @unchecked Sendable {
    // @unchecked Sendable: a connection is used by one test at a time, sequentially.
    private let fd: Int32
    private var buffer = Data()
    /// A chunked body read so far and not yet handed out, and where its decoding
    /// stands (`readChunkedBody`).
    private var decoded = Data()
    private var chunk = ChunkDecoding.size
    private enum ChunkDecoding { case size, data(left: Int), dataEnd, trailer, ended }

    /// Connects to `127.0.0.1:port`.
    public init(port: Int, host: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            // Not closed here: the connection is whole by now, so a throw still
            // runs `deinit`, which closes it. Closing it here as well would close
            // whatever another thread opened under the same number meanwhile.
            throw RawHTTPError("connect to \(host):\(port) failed: \(String(cString: strerror(errno)))")
        }
        // Generous, so that a slow shared machine is not a failure; set after the
        // connect, which a socket timeout would let a signal interrupt.
        var timeout = timeval(tv_sec: Int(60 * TestTime.scale), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // A write the server never reads fails after as long, rather than hanging.
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    /// Writes raw bytes.
    public func write(_ data: Data) throws {
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { throw RawHTTPError("send failed: \(String(cString: strerror(errno)))") }
                offset += n
            }
        }
    }

    /// Writes text.
    public func write(_ text: String) throws { try write(Data(text.utf8)) }

    /// Hangs up: shuts the socket down both ways, as a client that goes away does
    /// (the peer sees the end of the stream). The descriptor stays open until the
    /// connection is released, so that it is closed once, by `deinit`.
    public func hangUp() {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Reads one response (Content-Length, chunked, or to end of stream).
    public func readResponse() throws -> RawHTTPResponse {
        let head = try readResponseHead()
        let headers = head.headers
        var body = Data()
        if let length = headers["content-length"].flatMap(Int.init) {
            try fill(length)
            body = buffer.prefix(length)
            buffer.removeSubrange(0..<length)
        } else if headers["transfer-encoding"]?.lowercased() == "chunked" {
            while true {
                let lineEnd = try readUntil(Data("\r\n".utf8))
                let size = Int(String(decoding: buffer.prefix(lineEnd), as: UTF8.self).split(separator: ";")[0], radix: 16) ?? 0
                buffer.removeSubrange(0..<(lineEnd + 2))
                try fill(size + 2)
                body.append(buffer.prefix(size))
                buffer.removeSubrange(0..<(size + 2))
                if size == 0 { break }
            }
        } else {
            while try receive() {}
            body = buffer
            buffer = Data()
        }
        return RawHTTPResponse(status: head.status, headers: headers, body: body)
    }

    /// Reads the status line and header fields of a response, leaving its body to be
    /// read (for a streamed body: `readChunkedBody`). The answer's body is empty.
    public func readResponseHead(timeout: Duration? = nil) throws -> RawHTTPResponse {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let headerEnd = try readUntil(Data("\r\n\r\n".utf8), deadline: deadline)
        let head = String(decoding: buffer.prefix(headerEnd), as: UTF8.self)
        buffer.removeSubrange(0..<(headerEnd + 4))
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw RawHTTPError("bad status line \(head)") }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        decoded = Data()
        chunk = .size
        return RawHTTPResponse(status: status, headers: headers, body: Data())
    }

    /// Reads a chunked body, decoding it as it comes, until `marker` appears in it;
    /// answers the body up to and with the marker, keeping what follows for the next
    /// read. Throws when the body ends or the connection closes before the marker,
    /// or when `timeout` passes.
    public func readChunkedBody(through marker: String, timeout: Duration = .seconds(30)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        let wanted = Data(marker.utf8)
        while true {
            if let range = decoded.range(of: wanted) {
                let end = range.upperBound - decoded.startIndex
                defer { decoded.removeSubrange(decoded.startIndex..<(decoded.startIndex + end)) }
                return String(decoding: decoded.prefix(end), as: UTF8.self)
            }
            if case .ended = chunk { throw RawHTTPError("the body ended before \(marker.debugDescription)") }
            try decodeChunks(deadline: deadline)
        }
    }

    /// Reads the rest of a chunked body, through its last chunk; answers what of it
    /// was not read yet. Throws when the connection closes first (a stream the
    /// server aborted), or when `timeout` passes.
    public func readChunkedBodyToEnd(timeout: Duration = .seconds(30)) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            if case .ended = chunk { break }
            try decodeChunks(deadline: deadline)
        }
        defer { decoded = Data() }
        return String(decoding: decoded, as: UTF8.self)
    }

    /// Decodes what the buffer holds of the chunked body, reading more first when it
    /// holds nothing decodable.
    private func decodeChunks(deadline: ContinuousClock.Instant) throws {
        var progressed = false
        while true {
            switch chunk {
            case .size:
                guard let range = buffer.range(of: Data("\r\n".utf8)) else { break }
                let line = String(decoding: buffer[buffer.startIndex..<range.lowerBound], as: UTF8.self)
                guard let size = Int(line.split(separator: ";").first.map(String.init) ?? "", radix: 16) else {
                    throw RawHTTPError("bad chunk size line \(line.debugDescription)")
                }
                buffer.removeSubrange(buffer.startIndex..<range.upperBound)
                chunk = size == 0 ? .trailer : .data(left: size)
                progressed = true
                continue
            case .data(let left):
                guard !buffer.isEmpty else { break }
                let count = min(left, buffer.count)
                decoded.append(buffer.prefix(count))
                buffer.removeSubrange(buffer.startIndex..<(buffer.startIndex + count))
                chunk = left == count ? .dataEnd : .data(left: left - count)
                progressed = true
                continue
            case .dataEnd:
                guard buffer.count >= 2 else { break }
                buffer.removeSubrange(buffer.startIndex..<(buffer.startIndex + 2))
                chunk = .size
                progressed = true
                continue
            case .trailer:
                // No trailer fields: the empty line that ends the body.
                guard let range = buffer.range(of: Data("\r\n".utf8)) else { break }
                buffer.removeSubrange(buffer.startIndex..<range.upperBound)
                chunk = .ended
                return
            case .ended:
                return
            }
            if progressed { return }
            guard try receive(deadline: deadline) else { throw RawHTTPError("connection closed in a chunked body") }
        }
    }

    /// Whether the peer closes the connection (reads, discarding, until the end of
    /// the stream or a reset); false if it stays open until the receive timeout.
    public func readsEndOfStream() -> Bool {
        while true {
            do {
                if try !receive() { return true }
            } catch {
                return !(error as? RawHTTPError)!.description.contains("temporarily unavailable")
            }
        }
    }

    /// Every byte not read yet, up to the end of the stream (the peer closing).
    public func readToEnd() throws -> Data {
        while try receive() {}
        defer { buffer = Data() }
        return buffer
    }

    /// Runs a blocking step on a thread of its own (see `runBlocking`).
    public func async<T: Sendable>(_ body: @escaping @Sendable (RawHTTPConnection) throws -> T) async throws -> T {
        try await runBlocking { try body(self) }
    }

    private func readUntil(_ marker: Data, deadline: ContinuousClock.Instant? = nil) throws -> Int {
        while true {
            if let range = buffer.range(of: marker) { return range.lowerBound - buffer.startIndex }
            let more = try deadline.map { try receive(deadline: $0) } ?? receive()
            guard more else { throw RawHTTPError("connection closed before \(marker.count)-byte marker") }
        }
    }

    /// `receive`, waiting no later than `deadline` for bytes to arrive.
    private func receive(deadline: ContinuousClock.Instant) throws -> Bool {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw RawHTTPError("timed out waiting for bytes") }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(Int64(Int32.max), left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            let ready = poll(&entry, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 { throw RawHTTPError("poll failed: \(String(cString: strerror(errno)))") }
            if ready > 0 { return try receive() }
        }
    }

    private func fill(_ count: Int) throws {
        while buffer.count < count {
            guard try receive() else { throw RawHTTPError("connection closed with \(buffer.count) of \(count) bytes") }
        }
    }

    private func receive() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var n = recv(fd, &chunk, chunk.count, 0)
        while n < 0 && errno == EINTR { n = recv(fd, &chunk, chunk.count, 0) }
        if n < 0 { throw RawHTTPError("recv failed: \(String(cString: strerror(errno)))") }
        if n == 0 { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }
}

/// Sends one request on a new connection and reads the response, off the
/// concurrency pool.
public func httpRequest(
    port: Int, host: String = "127.0.0.1", method: String = "GET", path: String, headers: [String: String] = [:],
    body: Data? = nil
) async throws -> RawHTTPResponse {
    let connection = try RawHTTPConnection(port: port, host: host)
    return try await connection.async { connection in
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        try connection.write(head + "\r\n")
        if let body { try connection.write(body) }
        return try connection.readResponse()
    }
}

/// Runs blocking work on a thread of its own and waits for it. Not on a dispatch
/// queue: on Linux the concurrency pool shares dispatch's worker threads, and workers
/// blocked in `recv` would starve the very server tasks they wait for.
public func runBlocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await runOnOwnThread(named: "islet-test-block") { Result { try body() } }.get()
}
