import APNs
import Delivery
import FCM
import Foundation
import HTTPClient
import IsletCore
import IsletCrypto
import IsletSync
import IsletTesting
import Simulators
import Storage
import Testing

/// The one memory of refused credentials: its rules on a manual clock, and both
/// transports answering an app's pushes with a refusal instead of sending them,
/// until the app's credentials change (APNs, FCM) or the hold ends (FCM's token
/// endpoint).
@Suite("Refused credentials: one memory for both transports", .timeLimit(.minutes(1)))
struct RefusedCredentialsTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aRefusalStandsForItsVersionOfTheCredentialsAndATimedOneUntilItsEnd() {
        let clock = ManualWallClock(start: now)
        let refusals = RefusedCredentials(clock: clock)
        let apns = RefusedCredentials.Subject(service: .apns, appID: "app_1", version: now)
        let fcm = RefusedCredentials.Subject(service: .fcm, appID: "app_1", version: now)
        #expect(refusals.refusal(of: apns) == nil)
        refusals.record(apns, reason: "InvalidProviderToken")
        #expect(refusals.refusal(of: apns)?.reason == "InvalidProviderToken")
        // Another service of the same app, another app: untouched.
        #expect(refusals.refusal(of: fcm) == nil)
        #expect(refusals.refusal(of: .init(service: .apns, appID: "app_2", version: now)) == nil)
        // A standing refusal outlasts any time.
        clock.advance(by: 365 * 86_400)
        #expect(refusals.refusal(of: apns) != nil)
        // The credentials saved again: forgotten.
        let saved = RefusedCredentials.Subject(service: .apns, appID: "app_1", version: now.addingTimeInterval(1))
        #expect(refusals.refusal(of: saved) == nil)

        // A timed refusal: until its end, and not before its start (a clock stepped back).
        let start = clock.now()
        refusals.record(fcm, reason: "credentialsRejected", until: start.addingTimeInterval(60))
        #expect(refusals.refusal(of: fcm)?.until == start.addingTimeInterval(60))
        clock.advance(by: 59.999)
        #expect(refusals.refusal(of: fcm) != nil)
        clock.advance(by: 0.001)
        #expect(refusals.refusal(of: fcm) == nil)
        refusals.record(fcm, reason: "credentialsRejected", until: clock.now().addingTimeInterval(60))
        clock.advance(by: -1)
        #expect(refusals.refusal(of: fcm) == nil)
        clock.advance(by: 1)
        #expect(refusals.refusal(of: fcm) != nil)
        // A standing refusal replaces a timed one, and a timed one never shortens it.
        refusals.record(fcm, reason: "SENDER_ID_MISMATCH")
        refusals.record(fcm, reason: "credentialsRejected", until: clock.now().addingTimeInterval(60))
        clock.advance(by: 3600)
        #expect(refusals.refusal(of: fcm)?.reason == "SENDER_ID_MISMATCH")
        #expect(refusals.refusal(of: fcm)?.until == nil)
        #expect(refusals.refusal(of: fcm)?.since == start.addingTimeInterval(60))
    }

    @Test func aTimedRefusalAtTheExtremesOfTime() {
        // An end in the past never stands; one at the end of time stands; a refusal
        // recorded at the edge of the representable dates is read without fault.
        for start in [Date.distantPast, Date(timeIntervalSince1970: 0), now, Date.distantFuture] {
            let clock = ManualWallClock(start: start)
            let refusals = RefusedCredentials(clock: clock)
            let subject = RefusedCredentials.Subject(service: .fcm, appID: "app_1", version: start)
            refusals.record(subject, reason: "r", until: start)
            #expect(refusals.refusal(of: subject) == nil)
            refusals.record(subject, reason: "r", until: start.addingTimeInterval(-0.0))
            #expect(refusals.refusal(of: subject) == nil)
            refusals.record(subject, reason: "r", until: start.addingTimeInterval(.leastNonzeroMagnitude))
            #expect(refusals.refusal(of: subject) == nil)
            refusals.record(subject, reason: "r", until: .distantFuture.addingTimeInterval(1))
            #expect((refusals.refusal(of: subject) != nil) == (start < .distantFuture.addingTimeInterval(1)))
        }
    }

    @Test func aKeyAPNsRefusedIsNotUsedAgainUntilTheAppsCredentialsAreSaved() async throws {
        let clock = ManualWallClock(start: now)
        let signing = try P256.SigningKey.generate()
        var options = APNsSimulatorOptions()
        options.port = 0
        options.inspectPort = nil
        let simulator = try APNsSimulator(options: options, clock: clock, random: SeededRandomSource(seed: 5))
        try simulator.start()
        var settings = APNsClientConfiguration()
        settings.sandboxURL = URL(string: "https://127.0.0.1:\(simulator.port)")!
        settings.productionURL = settings.sandboxURL
        settings.trustRootsPEM = simulator.caCertificatePEM
        settings.connectTimeout = TestTime.scaled(settings.connectTimeout)
        let client = APNsClient(configuration: settings, clock: clock)
        do {
            try await withDeliveryStore { store in
                let credentials = APNsCredentials(teamID: "TEAMREFUSE", keyID: "KEYREFUSE1", privateKeyPEM: signing.pemRepresentation)
                try store.writeNow { session in
                    for (index, id) in ["app_1", "app_2"].enumerated() {
                        try session.insertApp(AppRecord(
                            id: id, name: id, bundleID: "com.example.app", credentials: credentials,
                            serverKeyHash: Data(repeating: UInt8(2 * index + 1), count: 32),
                            deviceKeyHash: Data(repeating: UInt8(2 * index + 2), count: 32),
                            createdAt: now, updatedAt: now))
                    }
                }
                let refusals = RefusedCredentials(clock: clock)
                let transport = APNsTransport(client: client, store: store, refusals: refusals)
                let push = claimedPush(createdAt: now)

                // The simulator trusts no key: APNs refuses it, once.
                let first = await send(push, through: transport)
                #expect(first.disposition == .credentialsRejected)
                #expect(first.attempts == 1)
                #expect(first.reason == "InvalidProviderToken")
                let second = await send(push, through: transport)
                #expect(second.disposition == .credentialsRejected)
                #expect(second.attempts == 0, "answered from the memory, not sent")
                #expect(second.reason == "credentialsRejected")
                #expect(simulator.engine.pushes().count == 1)
                #expect(refusals.refusal(of: .init(service: .apns, appID: "app_1", version: now))?.reason == "InvalidProviderToken")
                // Another app with the same key learns it for itself (one request).
                var other = push
                other.appID = "app_2"
                #expect(await send(other, through: transport).attempts == 1)
                #expect(simulator.engine.pushes().count == 2)

                // The key trusted and the app's credentials saved again: sent again.
                simulator.engine.trust(TrustedKey(keyID: credentials.keyID, teamID: credentials.teamID, publicKey: signing.publicKey))
                try store.writeNow { session in
                    var app = try #require(try session.app(id: "app_1"))
                    app.updatedAt = now.addingTimeInterval(1)
                    try session.updateApp(app)
                }
                let third = await send(push, through: transport)
                #expect(third.attempts == 1)
                #expect(third.reason != "InvalidProviderToken")
                #expect(simulator.engine.pushes().count == 3)
            }
        } catch {
            await client.shutdown()
            await simulator.shutdown()
            throw error
        }
        await client.shutdown()
        await simulator.shutdown()
    }

    @Test func anFCMTokenEndpointsRefusalIsHeldAMinuteAndFCMsOwnUntilTheCredentialsChange() async throws {
        let clock = ManualWallClock(start: now)
        try await FCMRig.with(clock: clock, seed: 9) { rig in
            let (simulator, client) = (rig.simulator, rig.client)
            let exchange = CountingExchange(CurlTokenExchange(client: rig.http))
            try await withDeliveryStore { store in
                try store.writeNow { session in try rig.insertApp(session, now: now) }
                let transport = FCMTransport(
                    client: client, store: store, exchange: exchange, clock: clock, allowPrivateTokenURIs: true,
                    refusals: RefusedCredentials(clock: clock))
                var push = claimedPush(kind: .fcm, createdAt: now)
                push.token = "fcm-refusal-token-000000001:APA91b"

                // The account is unknown to the token endpoint: refused, and held.
                let refused = await send(push, through: transport)
                #expect(refused.disposition == .credentialsRejected)
                #expect(refused.attempts == 0)
                #expect(exchange.posts == 1)
                rig.trustAccount()
                clock.advance(by: FCMTransport.tokenRefusalHold - 1)
                let held = await send(push, through: transport)
                #expect(held.disposition == .credentialsRejected)
                #expect(held.attempts == 0)
                #expect(exchange.posts == 1, "held: no exchange within the minute")
                // Then an exchange is tried again, and the message goes.
                clock.advance(by: 2)
                let sent = await send(push, through: transport)
                #expect(sent.disposition == .delivered, "\(sent)")
                #expect(exchange.posts == 2)

                // FCM's own refusal stands until the app's credentials are saved again.
                simulator.engine.inject(.senderIDMismatch)
                let mismatch = await send(push, through: transport)
                #expect(mismatch.disposition == .credentialsRejected)
                #expect(mismatch.reason == "SENDER_ID_MISMATCH")
                #expect(mismatch.attempts == 1)
                clock.advance(by: 86_400)
                let standing = await send(push, through: transport)
                #expect(standing.reason == "SENDER_ID_MISMATCH")
                #expect(standing.attempts == 0)
                let records = simulator.engine.records().count
                try store.writeNow { session in
                    var app = try #require(try session.app(id: "app_1"))
                    app.updatedAt = clock.now()
                    try session.updateApp(app)
                }
                let again = await send(push, through: transport)
                #expect(again.disposition == .delivered, "\(again)")
                #expect(simulator.engine.records().count == records + 1)
            }
        }
    }

    private func send(_ push: ClaimedPush, through transport: any PushTransport) async -> TransportResult {
        await withCheckedContinuation { continuation in
            transport.send(push) { continuation.resume(returning: $0) }
        }
    }
}

/// A token exchange that counts the forms it posts.
final class CountingExchange: FCMTokenExchange {
    let inner: any FCMTokenExchange
    private let count = Lock(0)

    init(_ inner: any FCMTokenExchange) {
        self.inner = inner
    }

    var posts: Int { count.withLock { $0 } }

    func post(url: String, form: String) async -> Result<(status: Int, body: Data), FCMTokenError> {
        count.withLock { $0 += 1 }
        return await inner.post(url: url, form: form)
    }
}
