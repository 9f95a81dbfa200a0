import APNsSimulator
import Foundation
import IsletCore
import IsletCrypto
import IsletServer
import Storage

/// `islet serve --simulator`: the APNs simulator in the same process, on 127.0.0.1,
/// trusting the signing keys the apps are given.
struct EmbeddedSimulator: EmbeddedAPNs {
    let simulator: APNsSimulator

    /// The factory `buildApplication` takes.
    static let factory: EmbeddedAPNsFactory = { configuration, clock in
        var options = APNsSimulatorOptions()
        options.host = "127.0.0.1"
        options.port = configuration.simulatorPort
        options.inspectPort = configuration.simulatorInspectPort
        // The channel management API of broadcast channels, on a free port.
        options.channelsPort = 0
        return EmbeddedSimulator(simulator: try APNsSimulator(options: options, clock: clock))
    }

    func start() throws -> EmbeddedAPNsEndpoint {
        let ports = try simulator.start()
        return EmbeddedAPNsEndpoint(
            url: URL(string: "https://127.0.0.1:\(ports.apns)")!, trustRootsPEM: simulator.caCertificatePEM,
            inspectURL: ports.inspect.map { "http://127.0.0.1:\($0)" },
            channelsURL: simulator.channelsPort.map { URL(string: "https://127.0.0.1:\($0)")! })
    }

    func trust(_ credentials: APNsCredentials) {
        guard let key = try? P256.SigningKey(pemRepresentation: credentials.privateKeyPEM) else { return }
        simulator.engine.trust(TrustedKey(keyID: credentials.keyID, teamID: credentials.teamID, publicKey: key.publicKey))
    }

    func shutdown() async {
        await simulator.shutdown()
    }
}
