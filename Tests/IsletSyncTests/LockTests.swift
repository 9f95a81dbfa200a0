import Foundation
import Glibc
import IsletSync
import Testing

@Suite("Locks")
struct LockTests {
    @Test func aLockSerialisesItsValue() async {
        let counter = Lock(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<10_000 { counter.withLock { $0 += 1 } } }
            }
        }
        #expect(counter.withLock { $0 } == 80_000)
    }

    @Test func aWaiterWakesWhenTheValueChanges() {
        let state = ConditionLock(0)
        Thread {
            for step in 1...3 { state.withLockBroadcasting { $0 = step } }
        }.start()
        let seen = state.wait(until: { $0 == 3 }, timeout: .seconds(60)) { $0 }
        #expect(seen == 3)
    }

    @Test func aWaitWithATimeoutEndsWithoutTheChange() {
        let state = ConditionLock(false)
        let started = ContinuousClock.now
        let seen = state.wait(until: { $0 }, timeout: .milliseconds(50)) { $0 }
        #expect(seen == false)
        #expect(ContinuousClock.now - started >= .milliseconds(50))
    }
}
