import Foundation
import IsletSync
import IsletThreads
import Testing

@Suite("Thread names")
struct ThreadNameTests {
    @Test func aThreadNamesItselfAsTheSystemShowsIt() {
        let names = ConditionLock<[String]?>(nil)
        for _ in 0..<50 {
            Thread {
                nameCurrentThread("islet-test-name-too-long")
                let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                names.withLockBroadcasting { $0 = ($0 ?? []) + [comm.trimmingCharacters(in: .newlines)] }
            }.start()
        }
        let seen = names.wait(until: { ($0?.count ?? 0) == 50 }, timeout: .seconds(60)) { $0 ?? [] }
        #expect(seen.count == 50)
        // Every one of them, cut to the 15 bytes the system keeps.
        #expect(seen.allSatisfy { $0 == "islet-test-name" }, "\(seen)")
    }
}
