import Foundation
import IsletCore
import IsletServer
import IsletTesting
import Testing

/// The process's resident memory, in bytes (`/proc/self/statm`).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// What bodies cost in memory, measured as the process's resident size: heads with
/// large bodies and no key cost nothing, and bodies with a key cost no more than
/// the buffered bytes allowed. The resident size is that of the whole process, so
/// these run alone, in a process of their own (`make test` runs them after the
/// rest, with ISLET_BODY_MEMORY=1).
@Suite(
    "Body memory: what a request costs before it is answered", .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["ISLET_BODY_MEMORY"] == "1", "runs alone: make test runs it"))
struct BodyMemoryTests {
    static let megabyte = 1 << 20

    /// Opens `count` connections, each sending `head` and then `sent` bytes of its
    /// body, and holding the rest back; answers them (still open).
    func hold(_ port: Int, count: Int, head: String, sent: Int) async throws -> [RawHTTPConnection] {
        let chunk = Data(repeating: 0x20, count: sent)
        var held: [RawHTTPConnection] = []
        for _ in 0..<count {
            let connection = try RawHTTPConnection(port: port)
            try await connection.async { c in
                try c.write(head)
                // A connection refused at once may be closed before all is written.
                try? c.write(chunk)
            }
            held.append(connection)
        }
        return held
    }

    @Test func headsWithoutAKeyCostNoBodyMemory() async throws {
        try await ServerHarness.with { h in
            let port = h.application.port
            _ = try await h.createApp()
            let before = residentBytes()
            let held = try await hold(
                port, count: 50,
                head: "POST /v1/apps/app_00000000000000000000/activities HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 8388608\r\n\r\n",
                sent: 2 * Self.megabyte)
            #expect(h.application.bufferedBodyBytes() == 0)
            let grown = residentBytes() - before
            // 50 bodies of 2 MB were sent: read, they would be 100 MB.
            #expect(grown < 24 * Self.megabyte, "resident memory grew by \(grown / Self.megabyte) MB")
            held.forEach { $0.hangUp() }
        }
    }

    @Test func bodiesWithAKeyCostNoMoreThanTheBufferedBytes() async throws {
        try await ServerHarness.with(configure: { $0.maxBufferedBodyBytesPerApp = 32 * Self.megabyte }) { h in
            let port = h.application.port
            let app = try await h.createApp()
            let before = residentBytes()
            // 40 timelines of 8 MB declared, 4 MB of each sent: 160 MB if all were
            // read; an app may hold 32 MB, so four are read and the rest refused.
            let held = try await hold(
                port, count: 40,
                head: "PUT /v1/apps/\(app.id)/activities/a1/timeline HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Authorization: Bearer \(app.serverKey)\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 8388608\r\n\r\n",
                sent: 4 * Self.megabyte)
            #expect(await eventually { h.application.bufferedBodyBytes(appID: app.id) == 32 * Self.megabyte })
            let grown = residentBytes() - before
            #expect(grown < 64 * Self.megabyte, "resident memory grew by \(grown / Self.megabyte) MB")
            held.forEach { $0.hangUp() }
            #expect(await eventually { h.application.bufferedBodyBytes() == 0 })
        }
    }
}
