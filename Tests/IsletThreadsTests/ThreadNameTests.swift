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

@Suite("Blocking work off the concurrency pool")
struct OwnThreadTests {
    /// The thread `body` runs on, as the system names it.
    private static func comm() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    @Test func blockingWorkRunsOnANamedThreadOfItsOwnAndAnswers() async {
        let answer = await runOnOwnThread(named: "islet-test-own") { (Self.comm(), 42) }
        #expect(answer.0 == "islet-test-own")
        #expect(answer.1 == 42)
    }

    @Test func workThatBlocksMoreThreadsThanThePoolHasStillLetsTasksRun() async {
        // More blocking waits at once than the pool has threads, each for a gate that
        // a task opens only once it saw every wait begin. Were the waits on the
        // pool, neither the last waits nor the opening task could ever run.
        struct Gate { var waiting = 0, open = false }
        let gate = ConditionLock(Gate())
        let width = ProcessInfo.processInfo.activeProcessorCount + 2
        let deadline = ContinuousClock.now + .seconds(60)
        let results = await withTaskGroup(of: Bool.self) { group -> [Bool] in
            for _ in 0..<width {
                group.addTask {
                    await runOnOwnThread(named: "islet-test-wait") {
                        gate.withLockBroadcasting { $0.waiting += 1 }
                        return gate.wait(until: { $0.open }, timeout: .seconds(60)) { $0.open }
                    }
                }
            }
            group.addTask {
                while gate.withLock({ $0.waiting }) < width && ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(5))
                }
                return gate.withLockBroadcasting { gate in
                    gate.open = gate.waiting == width
                    return gate.open
                }
            }
            var results: [Bool] = []
            for await result in group { results.append(result) }
            return results
        }
        #expect(results.count == width + 1)
        #expect(results.allSatisfy { $0 }, "\(results)")
    }
}
