import Delivery
import FCM
import Foundation
import HTTPClient
import IsletCore
import IsletCrypto
import IsletTesting
import Simulators
import Storage

/// An FCM simulator over TLS on port 0, the HTTP client service accounts' tokens are
/// exchanged through (trusting the simulator's CA), and the FCM client that sends to
/// it, all on `clock`; and a service account's key, which the simulator does not
/// trust until a test says so.
struct FCMRig {
    let simulator: FCMSimulator
    let http: HTTPClient
    let client: FCMClient
    let key: RSA.SigningKey
    static let clientEmail = "islet@islet-sim.iam.gserviceaccount.com"
    static let projectID = "islet-sim"

    /// Runs `body` with a rig, and stops the clients and the simulator when it ends.
    static func with(clock: ManualWallClock, seed: UInt64, _ body: (FCMRig) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            let simulator = try FCMSimulator(clock: clock, random: SeededRandomSource(seed: seed))
            try simulator.start()
            let caFile = directory.appendingPathComponent("ca.pem")
            try (simulator.caCertificatePEM ?? "").write(to: caFile, atomically: true, encoding: .utf8)
            var settings = HTTPClientConfiguration()
            settings.allowPrivateAddresses = true
            settings.caFile = caFile.path
            let http = try HTTPClient(configuration: settings)
            var fcmSettings = FCMClientConfiguration()
            fcmSettings.url = URL(string: simulator.url)!
            fcmSettings.trustRootsPEM = simulator.caCertificatePEM
            fcmSettings.clock = clock
            let client = FCMClient(configuration: fcmSettings)
            let rig = FCMRig(simulator: simulator, http: http, client: client, key: try RSA.SigningKey.generate())
            do {
                try await body(rig)
            } catch {
                await rig.stop()
                throw error
            }
            await rig.stop()
        }
    }

    /// Lets the simulator's token endpoint take the rig's service account.
    func trustAccount() {
        simulator.engine.trust(FCMTrustedAccount(clientEmail: Self.clientEmail, projectID: Self.projectID, publicKey: key.publicKey))
    }

    /// Adds `app_1` with the rig's service account to `session`, saved at `now`.
    func insertApp(_ session: any StoreSession, now: Date) throws {
        var app = AppRecord(
            id: "app_1", name: "Example", bundleID: "com.example.app", credentials: nil,
            serverKeyHash: Data(repeating: 1, count: 32), deviceKeyHash: Data(repeating: 2, count: 32), createdAt: now,
            updatedAt: now)
        app.fcm = FCMCredentials(
            projectID: Self.projectID, clientEmail: Self.clientEmail, privateKeyPEM: key.pemRepresentation, privateKeyID: nil,
            tokenURI: simulator.tokenURI)
        try session.insertApp(app)
    }

    private func stop() async {
        await client.shutdown()
        await http.shutdown()
        await simulator.shutdown()
    }
}
