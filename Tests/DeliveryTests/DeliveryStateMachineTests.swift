import Delivery
import Foundation
import Testing

/// The worker's loop decisions, on made-up time: no thread, no store, no socket.
@Suite("Delivery state machine")
struct DeliveryStateMachineTests {
    /// The injected clock's time, and the system's (they differ on purpose).
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let real = Date(timeIntervalSince1970: 1_700_000_000)

    /// 2,000 slots, batches of 250, leases renewed every hour (the renewal has a test
    /// of its own).
    func machine() -> DeliveryStateMachine {
        var configuration = DeliveryConfiguration(shutdownGrace: 10)
        configuration.lease = 3 * 3600
        return DeliveryStateMachine(configuration: configuration)
    }

    func seen(inFlight: Int = 0, after seconds: TimeInterval = 0) -> DeliveryStateMachine.Observation {
        .init(now: now.addingTimeInterval(seconds), real: real.addingTimeInterval(seconds), inFlight: inFlight)
    }

    func waited(
        woken: Bool = false, answers: Int = 0, stop: Date? = nil, inFlight: Int = 0, after seconds: TimeInterval = 0
    ) -> DeliveryStateMachine.Event {
        .waited(.init(woken: woken, answers: answers, stopDeadline: stop, observation: seen(inFlight: inFlight, after: seconds)))
    }

    /// A machine past its first renewal.
    func renewed() -> DeliveryStateMachine {
        var machine = machine()
        #expect(machine.handle(waited()) == .renew(now: now))
        #expect(machine.handle(.renewed(seen(inFlight: 2_000))) == .wait(until: real.addingTimeInterval(0.25), stopping: false))
        return machine
    }

    @Test func startsByLookingAtOnce() {
        #expect(machine().start(real: real) == .wait(until: real, stopping: false))
        #expect(machine().batch == 250)
    }

    @Test func claimsWhenWoken() {
        var machine = renewed()
        // 100 free slots: fewer than a batch, but pushes were just queued.
        #expect(machine.handle(waited(woken: true, inFlight: 1_900)) == .claim(limit: 100, now: now))
    }

    @Test func claimsWhenNothingIsInFlightOrABatchIsFree() {
        var machine = renewed()
        #expect(machine.handle(.renewed(seen(inFlight: 0))) == .claim(limit: 2_000, now: now))
        #expect(machine.handle(waited(inFlight: 1_750)) == .claim(limit: 250, now: now))
    }

    @Test func waitsForAnswersWhenFewSlotsAreFree() {
        var machine = renewed()
        // 100 free slots, not woken: the next answers free more; look at the queue.
        #expect(machine.handle(waited(inFlight: 1_900)) == .readNextDue)
    }

    @Test func waitsWithoutReadingTheQueueWhenFull() {
        var machine = renewed()
        #expect(machine.handle(waited(woken: true, inFlight: 2_000)) == .wait(until: real.addingTimeInterval(0.25), stopping: false))
    }

    @Test func aFullClaimWaitsForAnswers() {
        var machine = renewed()
        #expect(machine.handle(.renewed(seen())) == .claim(limit: 2_000, now: now))
        #expect(machine.handle(.claimed(count: 2_000, seen())) == .send(count: 2_000))
        #expect(machine.handle(.sent(count: 2_000, seen(inFlight: 2_000))) == .wait(until: real.addingTimeInterval(0.25), stopping: false))
    }

    @Test func whatIsClaimedIsSentAndAnEmptyClaimSendsNothing() {
        var machine = renewed()
        #expect(machine.handle(.renewed(seen())) == .claim(limit: 2_000, now: now))
        #expect(machine.handle(.claimed(count: 0, seen())) == .readNextDue)
        #expect(machine.handle(.nextDue(nil, seen())) == .wait(until: real.addingTimeInterval(0.25), stopping: false))
        #expect(machine.handle(.waited(.init(woken: true, answers: 0, stopDeadline: nil, observation: seen()))) == .claim(limit: 2_000, now: now))
        #expect(machine.handle(.claimed(count: 1, seen())) == .send(count: 1))
    }

    @Test func aPartialClaimWaitsUntilTheNextPushIsDueAQuarterSecondAtMost() {
        var machine = renewed()
        #expect(machine.handle(.renewed(seen())) == .claim(limit: 2_000, now: now))
        #expect(machine.handle(.claimed(count: 3, seen())) == .send(count: 3))
        #expect(machine.handle(.sent(count: 3, seen(inFlight: 3))) == .readNextDue)
        #expect(machine.handle(.nextDue(now.addingTimeInterval(0.1), seen(inFlight: 3))) == .wait(until: real.addingTimeInterval(0.1), stopping: false))
        #expect(machine.handle(.nextDue(now.addingTimeInterval(30), seen(inFlight: 3))) == .wait(until: real.addingTimeInterval(0.25), stopping: false))
        #expect(machine.handle(.nextDue(now.addingTimeInterval(-1), seen(inFlight: 3))) == .wait(until: real, stopping: false))
        #expect(machine.handle(.nextDue(nil, seen(inFlight: 3))) == .wait(until: real.addingTimeInterval(0.25), stopping: false))
    }

    @Test func batchesAnswersWhenManyAreInFlight() {
        var machine = renewed()
        #expect(machine.handle(waited(answers: 10, inFlight: 1_000)) == .gatherAnswers(pause: 0.001))
        #expect(machine.handle(.gathered(answers: 40)) == .record)
        // A full batch, few in flight, a wake or a stop: record at once.
        #expect(machine.handle(waited(answers: 250, inFlight: 1_000)) == .record)
        #expect(machine.handle(waited(answers: 10, inFlight: 100)) == .record)
        #expect(machine.handle(waited(woken: true, answers: 10, inFlight: 1_000)) == .record)
        #expect(machine.handle(waited(answers: 10, stop: real.addingTimeInterval(5), inFlight: 1_000)) == .record)
    }

    @Test func recordsThenClaims() {
        var machine = renewed()
        #expect(machine.handle(waited(answers: 3, inFlight: 0)) == .record)
        #expect(machine.handle(.recorded(succeeded: true, seen())) == .claim(limit: 2_000, now: now))
    }

    /// The heartbeat and lease renewal come first, on their own interval (a third of
    /// the lease). (Ending activities by the clock is the timekeeper's.)
    @Test func renewsLeasesOnAThirdOfTheLease() {
        var configuration = DeliveryConfiguration(shutdownGrace: 10)
        configuration.lease = 30
        var machine = DeliveryStateMachine(configuration: configuration)
        #expect(machine.renewInterval == 10)
        #expect(machine.handle(waited()) == .renew(now: now))
        #expect(machine.handle(.renewed(seen(inFlight: 2_000))) == .wait(until: real.addingTimeInterval(0.25), stopping: false))
        #expect(machine.handle(waited(inFlight: 2_000, after: 9)) == .wait(until: real.addingTimeInterval(9.25), stopping: false))
        #expect(machine.handle(waited(inFlight: 2_000, after: 10)) == .renew(now: now.addingTimeInterval(10)))
        #expect(machine.handle(.renewed(seen(inFlight: 2_000, after: 10))) == .wait(until: real.addingTimeInterval(10.25), stopping: false))
        #expect(machine.handle(waited(inFlight: 2_000, after: 60)) == .renew(now: now.addingTimeInterval(60)))
        #expect(machine.handle(.renewed(seen(inFlight: 2_000, after: 60))) == .wait(until: real.addingTimeInterval(60.25), stopping: false))
    }

    @Test func stopWaitsForAnswersInFlightThenExits() {
        var machine = renewed()
        let deadline = real.addingTimeInterval(5)
        #expect(machine.handle(waited(stop: deadline, inFlight: 2)) == .wait(until: deadline, stopping: true))
        #expect(machine.handle(waited(answers: 1, stop: deadline, inFlight: 1, after: 1)) == .record)
        #expect(machine.handle(.recorded(succeeded: true, seen(after: 1))) == .wait(until: deadline, stopping: true))
        #expect(machine.handle(waited(answers: 1, stop: deadline, inFlight: 0, after: 2)) == .record)
        #expect(machine.handle(.recorded(succeeded: true, seen(after: 2))) == .exit)
    }

    @Test func stopExitsAtItsDeadlineWithAnswersStillOut() {
        var machine = renewed()
        let deadline = real.addingTimeInterval(5)
        #expect(machine.handle(waited(stop: deadline, inFlight: 2)) == .wait(until: deadline, stopping: true))
        #expect(machine.handle(waited(stop: deadline, inFlight: 2, after: 5)) == .exit)
    }

    @Test func anAnswerThatArrivesWhileStoppingIsRecordedBeforeExiting() {
        var machine = renewed()
        let deadline = real.addingTimeInterval(5)
        // One in flight when the wait ended; it answered while the batch was
        // recorded: the machine does not exit before that answer is taken.
        #expect(machine.handle(waited(answers: 1, stop: deadline, inFlight: 1)) == .record)
        #expect(machine.handle(.recorded(succeeded: true, seen(inFlight: 0))) == .wait(until: deadline, stopping: true))
    }

    @Test func aStoreFailureBacksOffAQuarterSecond() {
        var machine = renewed()
        #expect(machine.handle(.renewed(seen())) == .claim(limit: 2_000, now: now))
        #expect(machine.handle(.claimFailed(seen())) == .wait(until: real.addingTimeInterval(0.25), stopping: false))
        // Answers the store refused are kept, and recorded after a pause.
        #expect(machine.handle(waited(answers: 4)) == .record)
        #expect(machine.handle(.recorded(succeeded: false, seen())) == .pause(seconds: 0.25))
        #expect(machine.handle(.paused) == .wait(until: .distantPast, stopping: false))
        #expect(machine.handle(waited(answers: 5)) == .record)
    }

    @Test func aStoreFailurePastTheStopDeadlineExits() {
        var machine = renewed()
        let deadline = real.addingTimeInterval(1)
        #expect(machine.handle(waited(answers: 4, stop: deadline, inFlight: 0, after: 2)) == .record)
        #expect(machine.handle(.recorded(succeeded: false, seen(after: 2))) == .exit)
    }
}
