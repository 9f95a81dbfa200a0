import Glibc

extension HTTPClient {
    /// The numeric addresses `host` resolves to now (`getaddrinfo`, IPv4 and IPv6, in
    /// the resolver's order, without repeats), for checking a webhook URL when it is
    /// saved; the check that counts is the one at connect time. A numeric `host`
    /// answers itself. Blocks for the lookup: call it off the concurrency pool's
    /// threads, or where a short wait is fine.
    public static func resolve(host: String, port: Int) throws(OutboundFailure) -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            throw OutboundFailure(.resolve, "\(host) does not resolve: \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var entry = list
        while let current = entry {
            entry = current.pointee.ai_next
            guard let address = current.pointee.ai_addr else { continue }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let written: UnsafePointer<CChar>?
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                written = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    withUnsafePointer(to: v4.pointee.sin_addr) { inet_ntop(AF_INET, $0, &text, socklen_t(text.count)) }
                }
            case AF_INET6:
                written = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                    withUnsafePointer(to: v6.pointee.sin6_addr) { inet_ntop(AF_INET6, $0, &text, socklen_t(text.count)) }
                }
            default:
                written = nil
            }
            guard written != nil else { continue }
            let numeric = text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if !addresses.contains(numeric) { addresses.append(numeric) }
        }
        guard !addresses.isEmpty else { throw OutboundFailure(.resolve, "\(host) has no IP address") }
        return addresses
    }
}
