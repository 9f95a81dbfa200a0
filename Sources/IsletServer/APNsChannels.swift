import APNs
import IsletCore
import IsletCrypto
import IsletService
import Storage

/// The services' channel management API, over APNs's (or a simulator's): the app's
/// credentials become its signing key, APNs's refusals the services' errors.
struct APNsChannels: BroadcastChannelAPI {
    let client: APNsChannelClient

    func createChannel(app: AppRecord, environment: APNsEnvironment, storesMostRecent: Bool) async throws(ChannelAPIError) -> String {
        let key = try Self.key(app)
        do {
            return try await client.create(bundleID: app.bundleID, storesMostRecent: storesMostRecent, key: key, environment: environment)
        } catch {
            throw Self.error(error)
        }
    }

    func deleteChannel(app: AppRecord, environment: APNsEnvironment, apnsChannelID: String) async throws(ChannelAPIError) {
        let key = try Self.key(app)
        do {
            try await client.delete(bundleID: app.bundleID, channelID: apnsChannelID, key: key, environment: environment)
        } catch {
            throw Self.error(error)
        }
    }

    private static func key(_ app: AppRecord) throws(ChannelAPIError) -> APNsSigningKey {
        guard let credentials = app.credentials else {
            throw ChannelAPIError(status: nil, reason: nil, message: "the app has no APNs credentials")
        }
        do {
            let key = try P256.SigningKey(pemRepresentation: credentials.privateKeyPEM)
            return APNsSigningKey(keyID: credentials.keyID, teamID: credentials.teamID, key: key)
        } catch {
            throw ChannelAPIError(status: 400, reason: nil, message: "the APNs private key does not parse")
        }
    }

    private static func error(_ error: APNsChannelError) -> ChannelAPIError {
        ChannelAPIError(status: error.status, reason: error.reason?.rawValue, message: error.message)
    }
}
