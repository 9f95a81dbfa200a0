import Foundation
import HTTP2
public import IsletCore
import IsletCrypto

/// The flags of `islet sim`, read into `APNsSimulatorOptions`.
public struct SimulatorCommandLine: Sendable {
    /// The simulator's options; the channel management API on 2195 unless told
    /// otherwise.
    public var options: APNsSimulatorOptions = {
        var options = APNsSimulatorOptions()
        options.channelsPort = 2195
        return options
    }()
    /// Where the generated CA certificate is written (when no `--cert` is given).
    public var caOutputPath = "islet-sim-ca.pem"

    /// Usage text for `islet sim --help`.
    public static let helpText = """
        Usage: islet sim [options]
               islet sim --fcm [FCM options]

        Runs a local APNs: HTTP/2 over TLS with APNs's checks and simulated devices,
        and a JSON inspection API on plain HTTP. With --fcm, runs a local FCM for
        Android instead (see FCM options below).

        Options:
          --port N                 APNs port (default 2197; 0 picks a free port)
          --inspect-port N         inspection API port (default 2198)
          --channels-port N        channel management API port, HTTP/2 over TLS (default 2195;
                                   0 picks a free port)
          --host ADDRESS           address the APNs port listens on (default 127.0.0.1)
          --inspect-host ADDRESS   address the inspection API listens on (default 127.0.0.1);
                                   it has no authentication: anyone who reaches it reads
                                   every push and can reset the simulator (web pages are
                                   kept out: a Host other than loopback or this address,
                                   a foreign Origin, or a change not sent as JSON is refused)
          --cert FILE --key FILE   server certificate chain and key (PEM); without them
                                   a local CA and certificate are generated
          --ca-out FILE            where the generated CA is written (default ./islet-sim-ca.pem)
          --trust KEY_ID:TEAM_ID:FILE
                                   accept provider tokens of this key (.p8 or public PEM);
                                   repeatable
          --environment sandbox|production   (default sandbox)
          --latency-ms N           delay every answer by N milliseconds
          --fail-rate R            answer a share R (0.0-1.0) of valid pushes with --fail-status
          --fail-status 500|503|429          (default 503)
          --priority-10-budget-per-hour N
                                   a simulated activity applies N priority-10 updates in
                                   any hour, then records them as throttled (default: no budget)
          --frequent-priority-10-budget-per-hour N
                                   the same, on a device registered with frequent_updates
                                   (default: the figure above)
          --start-budget N         a device takes N push-to-starts in any hour, then
                                   refuses them as throttled (default: no budget)
          --goaway-after N         send GOAWAY after N streams on a connection
          --max-streams N          concurrent streams per authenticated connection (default 1000)
          --threads N              event-loop threads (default 1)
          --quiet                  no line per push on standard output
        """

    /// Reads `arguments` (flags of the form `--name value` or `--name=value`).
    /// Files named by `--cert`, `--key` and `--trust` are read here, so a bad one
    /// stops the command before anything listens.
    public static func parse(_ arguments: [String]) throws(ConfigurationError) -> SimulatorCommandLine {
        var result = SimulatorCommandLine()
        var certPath: String?
        var keyPath: String?
        var failRate = 0.0
        var failStatus = 503
        var reader = FlagReader(arguments)
        func value(for flag: String, inline: String?) throws(ConfigurationError) -> String {
            try reader.value(for: flag, inline: inline)
        }
        func integer(_ flag: String, _ text: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
            try FlagReader.integer(flag, text, range)
        }
        while let (flag, inline) = reader.next() {
            switch flag {
            case "--port":
                result.options.port = try integer(flag, try value(for: flag, inline: inline), 0...65_535)
            case "--channels-port":
                result.options.channelsPort = try integer(flag, try value(for: flag, inline: inline), 0...65_535)
            case "--inspect-port":
                result.options.inspectPort = try integer(flag, try value(for: flag, inline: inline), 0...65_535)
            case "--host":
                result.options.host = try address(flag, try value(for: flag, inline: inline))
            case "--inspect-host":
                result.options.inspectHost = try address(flag, try value(for: flag, inline: inline))
            case "--cert":
                certPath = try value(for: flag, inline: inline)
            case "--key":
                keyPath = try value(for: flag, inline: inline)
            case "--ca-out":
                result.caOutputPath = try value(for: flag, inline: inline)
            case "--trust":
                result.options.engine.trustedKeys.append(try trustedKey(try value(for: flag, inline: inline)))
            case "--environment":
                let text = try value(for: flag, inline: inline)
                guard let environment = APNsEnvironment(rawValue: text) else {
                    throw ConfigurationError(.invalidValue, setting: flag, message: "\"\(text)\" is not sandbox or production")
                }
                result.options.engine.environment = environment
            case "--latency-ms":
                let milliseconds = try integer(flag, try value(for: flag, inline: inline), 0...600_000)
                result.options.latency = milliseconds > 0 ? .milliseconds(milliseconds) : nil
            case "--fail-rate":
                let text = try value(for: flag, inline: inline)
                guard let rate = Double(text), rate.isFinite, (0...1).contains(rate) else {
                    throw ConfigurationError(.invalidValue, setting: flag, message: "\"\(text)\" is not a rate from 0.0 to 1.0")
                }
                failRate = rate
            case "--fail-status":
                let text = try value(for: flag, inline: inline)
                guard let status = Int(text), [500, 503, 429].contains(status) else {
                    throw ConfigurationError(.invalidValue, setting: flag, message: "\"\(text)\" is not 500, 503 or 429")
                }
                failStatus = status
            case "--priority-10-budget-per-hour":
                result.options.engine.priority10BudgetPerHour = try integer(flag, try value(for: flag, inline: inline), 1...100_000)
            case "--frequent-priority-10-budget-per-hour":
                result.options.engine.frequentPriority10BudgetPerHour = try integer(
                    flag, try value(for: flag, inline: inline), 1...100_000)
            case "--start-budget":
                result.options.engine.startBudgetPerHour = try integer(flag, try value(for: flag, inline: inline), 1...100_000)
            case "--goaway-after":
                result.options.goawayAfterStreams = try integer(flag, try value(for: flag, inline: inline), 1...Int(Int32.max))
            case "--max-streams":
                result.options.maxStreams = UInt32(try integer(flag, try value(for: flag, inline: inline), 1...100_000))
            case "--threads":
                result.options.threads = try integer(flag, try value(for: flag, inline: inline), 1...64)
            case _ where flag.hasPrefix("--fcm-"):
                throw ConfigurationError(.invalidValue, setting: flag, message: "is an option of the FCM simulator: add --fcm")
            default:
                throw ConfigurationError(.unknownOption, setting: flag, message: "no such option; see islet sim --help")
            }
        }
        do {
            result.options.engine.faultInjection = try FaultInjection(failRate: failRate, status: failStatus)
        } catch {
            throw ConfigurationError(.invalidValue, setting: "--fail-rate", message: error.message)
        }
        switch (certPath, keyPath) {
        case (nil, nil):
            break
        case (let cert?, let key?):
            result.options.tls = TLSServerConfiguration(
                certificateChainPEM: try readFile(cert, setting: "--cert"), privateKeyPEM: try readFile(key, setting: "--key"))
        case (nil, _):
            throw ConfigurationError(.missingValue, setting: "--cert", message: "--key needs --cert")
        case (_, nil):
            throw ConfigurationError(.missingValue, setting: "--key", message: "--cert needs --key")
        }
        return result
    }

    /// The line `islet sim` prints once it listens: where APNs, its channel
    /// management API and the inspection API are (as URLs a client can use: an IPv6 address in brackets) and where the CA
    /// was written.
    public func banner(apnsPort: Int, inspectPort: Int?, channelsPort: Int? = nil, wroteCA: Bool) -> String {
        var banner = "islet sim: APNs (\(options.engine.environment.rawValue)) on https://\(Self.urlHost(options.host)):\(apnsPort)"
        if let channelsPort { banner += ", channels on https://\(Self.urlHost(options.host)):\(channelsPort)" }
        if let inspectPort { banner += ", inspection on http://\(Self.urlHost(options.inspectHost)):\(inspectPort)" }
        if wroteCA { banner += ", CA in \(caOutputPath)" }
        if options.engine.trustedKeys.isEmpty { banner += "; no --trust key given, so every provider token is refused" }
        return banner
    }

    /// Warnings for standard error: the inspection API on an address other machines
    /// can reach.
    public var warnings: [String] {
        guard options.inspectPort != nil, !Self.isLoopback(options.inspectHost) else { return [] }
        return [
            "islet sim: warning: the inspection API listens on \(options.inspectHost), beyond this machine, and has no"
                + " authentication: anyone who reaches it can read every push and reset the simulator",
        ]
    }

    /// `host` as the host part of a URL: an IPv6 address in brackets.
    static func urlHost(_ host: String) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    }

    /// Whether an address is only reachable from this machine.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    private static func address(_ flag: String, _ text: String) throws(ConfigurationError) -> String {
        guard !text.isEmpty, !text.contains(where: \.isWhitespace) else {
            throw ConfigurationError(.invalidValue, setting: flag, message: "an address is required, such as 127.0.0.1 or ::1")
        }
        return text
    }

    /// Reads `KEY_ID:TEAM_ID:FILE`, where FILE is an Apple `.p8` key or its public key
    /// in PEM.
    static func trustedKey(_ text: String) throws(ConfigurationError) -> TrustedKey {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
            throw ConfigurationError(.invalidValue, setting: "--trust", message: "\"\(text)\" is not KEY_ID:TEAM_ID:FILE")
        }
        let pem = try readFile(parts[2], setting: "--trust")
        if let signing = try? P256.SigningKey(pemRepresentation: pem) {
            return TrustedKey(keyID: parts[0], teamID: parts[1], publicKey: signing.publicKey)
        }
        do {
            return TrustedKey(keyID: parts[0], teamID: parts[1], publicKey: try P256.VerifyingKey(pemRepresentation: pem))
        } catch {
            throw ConfigurationError(.unusable, setting: "--trust", message: "\(parts[2]) is neither a P-256 .p8 key nor a P-256 public key in PEM")
        }
    }

    private static func readFile(_ path: String, setting: String) throws(ConfigurationError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(.unusable, setting: setting, message: "cannot read \(path)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
