internal import CLinux
import Glibc

/// Resolves `host:port` to socket addresses (numeric or by name).
func resolve(host: String, port: Int, passive: Bool = false) throws(HTTP2Error) -> [(family: Int32, address: [UInt8])] {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
    var result: UnsafeMutablePointer<addrinfo>?
    let rc = getaddrinfo(host, String(port), &hints, &result)
    guard rc == 0, result != nil else {
        throw HTTP2Error(.connectFailed, "cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
    }
    defer { freeaddrinfo(result) }
    var addresses: [(Int32, [UInt8])] = []
    var entry = result
    while let info = entry {
        let bytes = UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(info.pointee.ai_addrlen))
        addresses.append((info.pointee.ai_family, Array(bytes)))
        entry = info.pointee.ai_next
    }
    return addresses
}

/// Starts a non-blocking TCP connect; answers the socket, already connecting.
func startConnect(family: Int32, address: [UInt8]) throws(HTTP2Error) -> Int32 {
    let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw HTTP2Error(.connectFailed, "socket: \(String(cString: strerror(errno)))") }
    setNoDelay(fd)
    let rc = address.withUnsafeBytes { raw in
        connect(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
    }
    if rc != 0 && errno != EINPROGRESS {
        let reason = String(cString: strerror(errno))
        close(fd)
        throw HTTP2Error(.connectFailed, reason)
    }
    return fd
}

/// Turns off Nagle's algorithm: HTTP/2 frames are already batched per write.
func setNoDelay(_ fd: Int32) {
    var one: Int32 = 1
    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
}

/// Opens a listening socket on `host:port`; answers it and the bound port.
func listenSocket(host: String, port: Int, backlog: Int32 = 1024) throws(HTTP2Error) -> (fd: Int32, port: Int) {
    var lastError = "no address"
    for (family, address) in try resolve(host: host, port: port, passive: true) {
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { continue }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withUnsafeBytes { raw in
            bind(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard bound == 0, listen(fd, backlog) == 0 else {
            lastError = "cannot listen on \(host):\(port): \(String(cString: strerror(errno)))"
            close(fd)
            continue
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let family = storage.ss_family
        let boundPort: UInt16 = withUnsafePointer(to: &storage) { pointer in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        return (fd, Int(boundPort))
    }
    throw HTTP2Error(.invalidConfiguration, lastError)
}
