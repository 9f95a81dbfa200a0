import Glibc

/// Opens a TCP listening socket on `host:port` (port 0 picks a free port) and answers
/// its descriptor and the port actually bound.
func openListeningSocket(host: String, port: Int, backlog: Int32) throws(HTTPServerError) -> (fd: Int32, port: Int) {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
    var result: UnsafeMutablePointer<addrinfo>?
    let rc = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &result)
    guard rc == 0, let first = result else {
        throw HTTPServerError(.addressResolution, "cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
    }
    defer { freeaddrinfo(result) }

    var lastError = "no usable address"
    var entry: UnsafeMutablePointer<addrinfo>? = first
    while let info = entry {
        entry = info.pointee.ai_next
        let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
        guard fd >= 0 else {
            lastError = String(cString: strerror(errno))
            continue
        }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            lastError = "cannot bind \(host):\(port): \(String(cString: strerror(errno)))"
            close(fd)
            continue
        }
        guard listen(fd, backlog) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw HTTPServerError(.listen, "cannot listen on \(host):\(port): \(reason)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return (fd, boundPort(of: fd) ?? port)
    }
    throw HTTPServerError(.bind, lastError)
}

/// The local port a socket is bound to.
func boundPort(of fd: Int32) -> Int? {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let rc = withUnsafeMutablePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard rc == 0 else { return nil }
    return socketAddressDescription(&storage).port
}

/// The numeric host and port of a socket address.
func socketAddressDescription(_ address: UnsafePointer<sockaddr_storage>) -> (host: String, port: Int) {
    var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
    var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
    let length = socklen_t(address.pointee.ss_family == sa_family_t(AF_INET6)
        ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
    let rc = address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
    }
    guard rc == 0 else { return ("?", 0) }
    return (cStringArray(host), Int(cStringArray(service)) ?? 0)
}

/// The text of a NUL-terminated C buffer.
func cStringArray(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
