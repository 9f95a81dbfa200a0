import Foundation
import IsletCore
import Simulators
import Testing

@Suite("Simulator: fault injection")
struct FaultInjectionTests {
    let token = SimulatorHarness.token(0x31)

    @Test(arguments: [(503, APNsReason.serviceUnavailable), (500, .internalServerError), (429, .tooManyRequests)])
    func everyValidRequestFailsAtRateOne(status: Int, reason: APNsReason) throws {
        let sim = try SimulatorHarness(faults: try FaultInjection(failRate: 1, status: status))
        let response = sim.send(to: token, payload: SimulatorHarness.start(timestamp: sim.now))
        expectRefusal(response, status, reason)
        let record = try #require(sim.lastRecord)
        #expect(record.injectedFault)
        #expect(record.deviceOutcome == .rejected)
        // The device never saw it: no activity, no token learned.
        #expect(sim.engine.activities().isEmpty)
        #expect(sim.engine.tokens().isEmpty)
    }

    @Test func validationFailuresWinOverInjectedFaults() throws {
        let sim = try SimulatorHarness(faults: try FaultInjection(failRate: 1, failStatus: .serviceUnavailable))
        expectRefusal(sim.send(to: token, topic: nil), 400, .missingTopic)
        #expect(sim.lastRecord?.injectedFault == false)
        expectRefusal(sim.send(to: token, headers: ["authorization": nil]), 403, .missingProviderToken)
    }

    @Test func theRateFollowsTheInjectedRandomSource() throws {
        func outcomes(seed: UInt64) throws -> [Int] {
            let sim = try SimulatorHarness(faults: try FaultInjection(failRate: 0.5, status: 503), seed: seed)
            return (0..<200).map { _ in sim.send(to: token).status }
        }
        let first = try outcomes(seed: 5)
        #expect(try outcomes(seed: 5) == first)
        #expect(try outcomes(seed: 6) != first)
        let failures = first.filter { $0 == 503 }.count
        #expect(failures > 60 && failures < 140)
        #expect(Set(first) == [200, 503])
    }

    @Test func noFaultsAtRateZero() throws {
        let sim = try SimulatorHarness(faults: try FaultInjection(failRate: 0, status: 500))
        #expect((0..<50).allSatisfy { _ in sim.send(to: token).status == 200 })
    }

    @Test func settingsAreChecked() {
        #expect(throws: SimulatorError.self) { try FaultInjection(failRate: 1.5) }
        #expect(throws: SimulatorError.self) { try FaultInjection(failRate: -0.1) }
        #expect(throws: SimulatorError.self) { try FaultInjection(failRate: .nan) }
        let status = #expect(throws: SimulatorError.self) { try FaultInjection(failRate: 0.1, status: 502) }
        #expect(status?.code == .invalidFailStatus)
        #expect(FaultInjection.FailStatus.allCases.map(\.rawValue).sorted() == [429, 500, 503])
    }
}
