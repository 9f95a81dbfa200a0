import Foundation
import Glibc
import IsletSync
import IsletTesting
import Testing

/// What the tests' own client does with descriptors. A descriptor closed twice
/// closes, the second time, whatever another thread opened under the same number in
/// between: a socket of another test, an SQLite file, or one of libdispatch's own
/// epoll, timer or event descriptors (whose loss crashed and hung whole test runs).
@Suite("Test client descriptors")
struct DescriptorTests {
    @Test func aRefusedConnectionClosesItsSocketOnce() throws {
        let refused = try ReservedPort()
        let state = ConditionLock<(stop: Bool, done: Bool, checks: Int, lost: Int)>((false, false, 0, 0))
        // Opens pipes and checks, again and again, that they are still its own: a
        // second close by the other thread would take one of them away.
        Thread {
            while !state.withLock({ $0.stop }) {
                var ends: [Int32] = [0, 0]
                guard pipe(&ends) == 0 else { continue }
                var opened = stat()
                fstat(ends[0], &opened)
                var lost = 0
                for _ in 0..<20 {
                    var now = stat()
                    if fstat(ends[0], &now) != 0 || now.st_ino != opened.st_ino { lost += 1 }
                }
                state.withLock { $0.checks += 1; $0.lost += lost }
                close(ends[1])
                if lost == 0 { close(ends[0]) }
            }
            state.withLockBroadcasting { $0.done = true }
        }.start()
        for _ in 0..<3_000 {
            #expect(throws: RawHTTPError.self) { try RawHTTPConnection(port: refused.port) }
        }
        state.withLock { $0.stop = true }
        let (checks, lost) = state.wait(until: { $0.done }) { ($0.checks, $0.lost) }
        #expect(checks > 0)
        #expect(lost == 0, "a refused connection closed \(lost) descriptors it did not own")
    }
}
