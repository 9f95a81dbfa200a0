import IsletSync
import APNs
import Foundation
import HTTP2
import IsletCore
import IsletCrypto
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The APNs client against a misbehaving server: a raw TCP listener in this process
/// reads the client's request, then answers with frames taken from the input, and
/// closes. One client and one listener serve every input; each input is one push.
///
/// The input is a list of frames, each `type flags stream length(2 bytes, big
/// endian) payload`: the frame header's length is the payload's real length, so a
/// short last payload is sent as it is. The server's (empty) SETTINGS goes first.
/// Should the client connect again within the same push (after a GOAWAY that refused
/// it, say), the new connection gets a plain 200. The push must finish, whatever
/// the frames, and the client must keep working.
public enum APNsClientFuzz {
    private struct Setup: @unchecked Sendable {
        let client: APNsClient
        let key: APNsSigningKey
        let listener: Int32
    }

    private static let setup: Setup = {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        precondition(listen(listener, 16) == 0, "listen: \(errno)")
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: bound.sin_port))
        var configuration = APNsClientConfiguration()
        configuration.sandboxURL = URL(string: "http://127.0.0.1:\(port)")!
        configuration.productionURL = configuration.sandboxURL
        configuration.breakerThreshold = 1 << 40
        configuration.connectTimeout = .seconds(2)
        let client = APNsClient(configuration: configuration, clock: ManualWallClock())
        let key = APNsSigningKey(keyID: "KEY1234567", teamID: "TEAM123456", key: try! P256.SigningKey.generate())
        return Setup(client: client, key: key, listener: listener)
    }()

    public static func run(_ bytes: UnsafeRawBufferPointer) {
        let setup = self.setup
        let script = frames(bytes)
        let done = Atomic<Bool>(false)
        let request = APNsRequest(
            deviceToken: String(repeating: "ab", count: 32), topic: "com.example.app", pushType: .alert,
            apnsID: "6E0B5A52-0A3B-4B43-9A6B-5F6D1A0E2C11", payload: Data(#"{"aps":{"alert":"hi"}}"#.utf8))
        setup.client.send(request, key: setup.key, environment: .sandbox) { result in
            if result.disposition == .delivered, result.response?.status != 200 {
                fatalError("delivered with status \(String(describing: result.response?.status))")
            }
            if fuzzVerbose { print(result.disposition, result.response.map { "\($0)" } ?? "", result.error.map { "\($0)" } ?? "") }
            done.store(true, ordering: .releasing)
        }
        var connections = 0
        let deadline = ContinuousClock.now + .seconds(10)
        while !done.load(ordering: .acquiring) {
            guard ContinuousClock.now < deadline else { fatalError("the push did not finish within 10 s") }
            var poller = pollfd(fd: setup.listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 1) > 0 else { continue }
            let fd = accept(setup.listener, nil, nil)
            guard fd >= 0 else { continue }
            connections += 1
            serve(fd, script: connections == 1 ? script : nil)
        }
    }

    /// Reads the client's request, answers `script` (or a plain 200 for its stream),
    /// half-closes, and waits for the client to close.
    private static func serve(_ fd: Int32, script: [UInt8]?) {
        defer { close(fd) }
        var received: [UInt8] = []
        var streamID: UInt32?
        let deadline = ContinuousClock.now + .seconds(2)
        while streamID == nil, ContinuousClock.now < deadline {
            guard FuzzSocket.readSome(fd, into: &received, milliseconds: 5) else { break }
            streamID = endedStream(in: received)
        }
        var answer: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]
        if let script {
            answer += script
        } else if let streamID {
            // HEADERS, END_STREAM | END_HEADERS, `:status: 200` (static table index 8).
            answer += [0, 0, 1, 1, 5] + withUnsafeBytes(of: streamID.bigEndian, Array.init) + [0x88]
        }
        FuzzSocket.writeAll(fd, answer)
        shutdown(fd, Int32(SHUT_WR))
        guard FuzzSocket.readToEnd(fd, timeout: 5) else { fatalError("the client kept a connection open 5 s after the server closed it") }
    }

    /// The stream of the first frame in `bytes` (after the 24-byte preface) that ends
    /// a stream.
    private static func endedStream(in bytes: [UInt8]) -> UInt32? {
        var at = 24
        while at + 9 <= bytes.count {
            let length = Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
            let type = bytes[at + 3]
            let flags = bytes[at + 4]
            let stream = UInt32(bytes[at + 5] & 0x7F) << 24 | UInt32(bytes[at + 6]) << 16 | UInt32(bytes[at + 7]) << 8 | UInt32(bytes[at + 8])
            if (type == 0 || type == 1) && flags & 1 != 0 { return stream }
            at += 9 + length
        }
        return nil
    }

    /// The frames the input describes, as bytes.
    static func frames(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var out: [UInt8] = []
        var at = 0
        while at + 5 <= bytes.count {
            let type = bytes[at]
            let flags = bytes[at + 1]
            let stream = bytes[at + 2]
            let wanted = Int(bytes[at + 3]) << 8 | Int(bytes[at + 4])
            at += 5
            let payload = bytes[at..<min(bytes.count, at + wanted)]
            at += payload.count
            let length = payload.count
            out += [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags, 0, 0, 0, stream]
            out += payload
        }
        return out
    }
}
