import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking HTTP/1.1 client on one keep-alive connection: enough to drive Islet's
/// API from benchmark threads without a task per request.
final class BenchHTTP {
    struct Response {
        let status: Int
        let body: Data
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let fd: Int32
    private var buffer = [UInt8]()
    private var chunk = [UInt8](repeating: 0, count: 65_536)

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure(description: "connect to \(port) failed")
        }
    }

    deinit { close(fd) }

    func request(
        _ method: String, _ path: String, key: String? = nil, body: String? = nil, headers: [String: String] = [:]
    ) throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let key { head += "Authorization: Bearer \(key)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        let bytes = Array((head + "\r\n" + (body ?? "")).utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send failed") }
            sent += n
        }
        return try readResponse()
    }

    private func fill() throws {
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw Failure(description: "connection closed") }
        buffer.append(contentsOf: chunk[0..<n])
    }

    private func readResponse() throws -> Response {
        var headerEnd: Int?
        while headerEnd == nil {
            if buffer.count >= 4 {
                for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
                    headerEnd = i
                    break
                }
            }
            if headerEnd == nil { try fill() }
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        var length = 0
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "content-length" {
                length = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        let start = headerEnd! + 4
        while buffer.count < start + length { try fill() }
        let body = Data(buffer[start..<(start + length)])
        buffer.removeFirst(start + length)
        return Response(status: status, body: body)
    }
}

/// Runs `body(lane)` on `count` threads of their own at once and waits for all:
/// `DispatchQueue.concurrentPerform` would run only as many lanes at a time as
/// there are cores, and blocking sockets need every lane live.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for lane in 0..<count {
        group.enter()
        Thread {
            body(lane)
            group.leave()
        }.start()
    }
    group.wait()
}
