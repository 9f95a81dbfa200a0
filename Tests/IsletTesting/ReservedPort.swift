import Glibc

/// A loopback port that refuses every connection for as long as this value lives:
/// bound, so that no other test or server can take it, and never listening. A port
/// found free and released again is no such thing: on a busy machine another test's
/// server may take it before the connection that was meant to be refused.
public final class ReservedPort: @unchecked Sendable {
    // @unchecked Sendable: the descriptor is set once and only closed in deinit.
    private let fd: Int32
    /// The port number.
    public let port: Int

    /// Binds a fresh port on 127.0.0.1.
    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError("socket failed: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw RawHTTPError("cannot bind a loopback port: \(reason)")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}
