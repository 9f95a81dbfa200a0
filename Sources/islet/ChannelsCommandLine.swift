import APNs
import Foundation
import IsletCore
import IsletCrypto

/// The flags of `islet channels`: an app's iOS 18 broadcast channels, managed at
/// APNs's channel management API (or a simulator's) with the app's key.
struct ChannelsCommandLine: Sendable {
    /// What to do.
    enum Action: Sendable, Equatable {
        case create(storesMostRecent: Bool)
        case list
        case read(channelID: String)
        case delete(channelID: String)
    }

    /// What to do.
    var action: Action
    /// The signing key.
    var key: APNsSigningKey
    /// The app's bundle id.
    var bundleID: String
    /// Which environment.
    var environment: APNsEnvironment
    /// The management API's endpoints and trust.
    var client: APNsChannelConfiguration

    /// Usage text for `islet channels --help`.
    static let helpText = """
        Usage: islet channels create [--most-recent] | list | read ID | delete ID
                              --key AuthKey.p8 --key-id K --team-id T --topic BUNDLE_ID
                              [--sandbox | --url URL --ca FILE]

        Manages the app's iOS 18 broadcast channels at APNs's channel management API, with
        the app's key. ID is Apple's channel id, as APNs gave it (standard base64).

          create        a channel for Live Activities; --most-recent keeps its newest message
                        for phones that subscribe later (default: none kept). Prints its id.
          list          every channel of the app in the environment, one id per line
          read ID       the channel's message storage policy
          delete ID     deletes it (final); a channel APNs does not have is gone already

        Endpoint:
          --sandbox     api-manage-broadcast.sandbox.push.apple.com:2195 (default: production,
                        api-manage-broadcast.push.apple.com:2196)
          --url URL     another endpoint, such as an islet sim's channel port
          --ca FILE     trust this CA (PEM) for --url

        Exit status: 0 done, 1 refused by APNs (the reason is printed), 2 a bad flag,
        3 APNs could not be reached.
        """

    /// Reads `arguments`; throws `ConfigurationError` for a bad flag.
    static func parse(_ arguments: [String]) throws -> ChannelsCommandLine {
        var values: [String: String] = [:]
        var switches: Set<String> = []
        var positional: [String] = []
        var index = 0
        let valued: Set<String> = ["--key", "--key-id", "--team-id", "--topic", "--url", "--ca"]
        while index < arguments.count {
            var flag = arguments[index]
            index += 1
            guard flag.hasPrefix("--") else {
                positional.append(flag)
                continue
            }
            var inline: String?
            if let equals = flag.firstIndex(of: "=") {
                inline = String(flag[flag.index(after: equals)...])
                flag = String(flag[..<equals])
            }
            if flag == "--sandbox" || flag == "--most-recent" {
                switches.insert(flag)
                continue
            }
            guard valued.contains(flag) else {
                throw ConfigurationError(.unknownOption, setting: flag, message: "no such option; see islet channels --help")
            }
            if let inline {
                values[flag] = inline
            } else {
                guard index < arguments.count else {
                    throw ConfigurationError(.missingValue, setting: flag, message: "a value is required")
                }
                values[flag] = arguments[index]
                index += 1
            }
        }
        func required(_ flag: String) throws(ConfigurationError) -> String {
            guard let value = values[flag], !value.isEmpty else {
                throw ConfigurationError(.missingValue, setting: flag, message: "required")
            }
            return value
        }
        guard let verb = positional.first else {
            throw ConfigurationError(.missingValue, setting: "command", message: "create, list, read ID or delete ID")
        }
        func channelID() throws(ConfigurationError) -> String {
            guard positional.count == 2 else {
                throw ConfigurationError(.missingValue, setting: verb, message: "takes one channel id (Apple's, base64)")
            }
            let id = positional[1]
            guard Data(base64Encoded: id) != nil else {
                throw ConfigurationError(.invalidValue, setting: verb, message: "\"\(id)\" is not a channel id (base64, as APNs gave it)")
            }
            return id
        }
        let action: Action
        switch verb {
        case "create": action = .create(storesMostRecent: switches.contains("--most-recent"))
        case "list": action = .list
        case "read": action = .read(channelID: try channelID())
        case "delete": action = .delete(channelID: try channelID())
        default:
            throw ConfigurationError(.invalidValue, setting: "command", message: "\"\(verb)\" is not create, list, read or delete")
        }
        if verb != "create", switches.contains("--most-recent") {
            throw ConfigurationError(.invalidValue, setting: "--most-recent", message: "is taken by create only")
        }
        if ["create", "list"].contains(verb), positional.count > 1 {
            throw ConfigurationError(.invalidValue, setting: verb, message: "takes no channel id")
        }
        let keyPath = try required("--key")
        guard let pem = FileManager.default.contents(atPath: keyPath) else {
            throw ConfigurationError(.unusable, setting: "--key", message: "cannot read \(keyPath)")
        }
        let privateKey: P256.SigningKey
        do {
            privateKey = try P256.SigningKey(pemRepresentation: String(decoding: pem, as: UTF8.self))
        } catch {
            throw ConfigurationError(.unusable, setting: "--key", message: error.reason)
        }
        let key = APNsSigningKey(keyID: try required("--key-id"), teamID: try required("--team-id"), key: privateKey)
        var client = APNsChannelConfiguration()
        if let url = values["--url"] {
            guard let parsed = URL(string: url), parsed.host != nil else {
                throw ConfigurationError(.invalidValue, setting: "--url", message: "\"\(url)\" is not a URL with a host")
            }
            client.productionURL = parsed
            client.sandboxURL = parsed
        }
        if let ca = values["--ca"] {
            guard let pem = FileManager.default.contents(atPath: ca) else {
                throw ConfigurationError(.unusable, setting: "--ca", message: "cannot read \(ca)")
            }
            client.trustRootsPEM = String(decoding: pem, as: UTF8.self)
        }
        return ChannelsCommandLine(
            action: action, key: key, bundleID: try required("--topic"),
            environment: switches.contains("--sandbox") ? .sandbox : .production, client: client)
    }

    /// Runs the action against the management API; answers the exit status and the
    /// lines to print (to standard output when it worked, to standard error when not).
    func run() async -> (status: Int32, lines: [String]) {
        // One key signs every request of the command.
        let tokens = ProviderTokenManager(signingKey: key)
        let api = APNsChannelClient(configuration: client, tokens: { _ in tokens })
        do throws(APNsChannelError) {
            switch action {
            case .create(let storesMostRecent):
                let id = try await api.create(
                    bundleID: bundleID, storesMostRecent: storesMostRecent, key: key, environment: environment)
                await api.shutdown()
                return (0, [id])
            case .list:
                let ids = try await api.list(bundleID: bundleID, key: key, environment: environment)
                await api.shutdown()
                return (0, ids)
            case .read(let channelID):
                let channel = try await api.read(bundleID: bundleID, channelID: channelID, key: key, environment: environment)
                await api.shutdown()
                return (0, [
                    "channel: \(channelID)", "message-storage-policy: \(channel.storesMostRecent ? "1 (most recent)" : "0 (none)")",
                    "push-type: \(channel.pushType)",
                ])
            case .delete(let channelID):
                try await api.delete(bundleID: bundleID, channelID: channelID, key: key, environment: environment)
                await api.shutdown()
                return (0, ["deleted \(channelID)"])
            }
        } catch {
            await api.shutdown()
            return (error.status == nil ? 3 : 1, ["islet: \(error.message)"])
        }
    }
}
