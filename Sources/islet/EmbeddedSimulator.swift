import Foundation
import IsletCore
import IsletCrypto
import IsletServer
import Simulators
import Storage

/// `islet serve --simulator`: the APNs and FCM simulators in the same process, on
/// 127.0.0.1, trusting the signing keys and service accounts the apps are given.
struct EmbeddedSimulator: EmbeddedSimulators {
    let simulator: APNsSimulator
    let fcm: FCMSimulator

    /// The factory `buildApplication` takes.
    static let factory: EmbeddedSimulatorsFactory = { configuration, clock in
        var options = APNsSimulatorOptions()
        options.host = "127.0.0.1"
        options.port = configuration.simulatorPort
        options.inspectPort = configuration.simulatorInspectPort
        // The channel management API of broadcast channels, on a free port.
        options.channelsPort = 0
        return EmbeddedSimulator(
            simulator: try APNsSimulator(options: options, clock: clock), fcm: try FCMSimulator(port: 0, clock: clock))
    }

    func start() throws -> EmbeddedSimulatorEndpoints {
        let ports = try simulator.start()
        try fcm.start()
        var endpoint = EmbeddedSimulatorEndpoints(
            url: URL(string: "https://127.0.0.1:\(ports.apns)")!, trustRootsPEM: simulator.caCertificatePEM,
            inspectURL: ports.inspect.map { "http://127.0.0.1:\($0)" },
            channelsURL: simulator.channelsPort.map { URL(string: "https://127.0.0.1:\($0)")! })
        endpoint.fcmURL = URL(string: fcm.url)
        endpoint.fcmTrustRootsPEM = fcm.caCertificatePEM
        endpoint.fcmInspectURL = fcm.http1URL
        return endpoint
    }

    func trust(_ credentials: APNsCredentials) {
        guard let key = try? P256.SigningKey(pemRepresentation: credentials.privateKeyPEM) else { return }
        simulator.engine.trust(TrustedKey(keyID: credentials.keyID, teamID: credentials.teamID, publicKey: key.publicKey))
    }

    func trust(_ credentials: FCMCredentials) {
        guard let key = try? RSA.SigningKey(pemRepresentation: credentials.privateKeyPEM) else { return }
        fcm.engine.trust(FCMTrustedAccount(
            clientEmail: credentials.clientEmail, projectID: credentials.projectID, publicKey: key.publicKey))
    }

    func makeFCMAccount() throws -> FCMCredentials? {
        let json = try fcm.makeServiceAccount(projectID: "islet-demo")
        guard let projectID = json["project_id"]?.stringValue, let email = json["client_email"]?.stringValue,
            let key = json["private_key"]?.stringValue, let tokenURI = json["token_uri"]?.stringValue
        else { return nil }
        return FCMCredentials(
            projectID: projectID, clientEmail: email, privateKeyPEM: key, privateKeyID: json["private_key_id"]?.stringValue,
            tokenURI: tokenURI)
    }

    func shutdown() async {
        await fcm.shutdown()
        await simulator.shutdown()
    }
}
