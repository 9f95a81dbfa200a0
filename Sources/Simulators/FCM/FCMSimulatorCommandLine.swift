import Foundation
public import IsletCore

/// The flags of `islet sim --fcm`, which runs the FCM simulator instead of the APNs
/// one.
public struct FCMSimulatorCommandLine: Sendable {
    /// Port of FCM's API over HTTP/2 and TLS (Islet's `--fcm-url`); 0 picks a free one.
    public var port = 2199
    /// Port of FCM's API over plain HTTP/1.1 and the inspection API; 0 picks a free one.
    public var http1Port = 2200
    /// The Firebase project of the service account written at start.
    public var projectID = "islet-demo"
    /// Where the generated CA certificate is written.
    public var caOutputPath = "islet-fcm-ca.pem"
    /// Where the service account made at start is written (mode 0600).
    public var accountOutputPath = "islet-fcm-account.json"
    /// Whether each send gets a line on standard output.
    public var quiet = false

    /// The section of `islet sim --help` on `--fcm`.
    public static let helpText = """
        With --fcm, islet sim runs a local FCM (Firebase Cloud Messaging, for Android)
        instead of APNs: FCM's HTTP v1 API and its OAuth token endpoint, over HTTP/2 and
        TLS (as Islet speaks to FCM) and over plain HTTP/1.1 (as Google's Python clients
        speak), with simulated Android devices behind them. The HTTP/1.1 port also serves
        an inspection API: GET /messages, GET /devices, GET and POST /faults
        {fault, count?, retry_after?}, POST /unregister {token}, POST /accounts
        {project_id?, client_email?, token_uri?}, POST /reset, GET /healthz. At start it
        makes a service account it trusts and writes it as the JSON Firebase gives
        (its token_uri the HTTP/1.1 port's /token). The APNs options above do not apply.

        FCM options:
          --fcm                    run the FCM simulator
          --fcm-port N             FCM over HTTP/2 and TLS, for Islet's --fcm-url (default 2199;
                                   0 picks a free port)
          --fcm-http-port N        FCM over HTTP/1.1 and the inspection API, on 127.0.0.1
                                   (default 2200; 0 picks a free port)
          --fcm-project ID         the service account's Firebase project (default islet-demo)
          --fcm-account-out FILE   where the service account is written, mode 0600
                                   (default ./islet-fcm-account.json)
          --ca-out FILE            where the generated CA is written (default ./islet-fcm-ca.pem)
          --quiet                  no line per message on standard output
        """

    /// The APNs simulator's flags, refused with `--fcm` by name.
    static let apnsFlags: Set = [
        "--port", "--inspect-port", "--channels-port", "--host", "--inspect-host", "--cert", "--key", "--trust",
        "--environment", "--latency-ms", "--fail-rate", "--fail-status", "--priority-10-budget-per-hour",
        "--frequent-priority-10-budget-per-hour", "--start-budget", "--goaway-after", "--max-streams", "--threads",
    ]

    /// Reads `arguments` (`--fcm` among them; flags of the form `--name value` or
    /// `--name=value`).
    public static func parse(_ arguments: [String]) throws(ConfigurationError) -> FCMSimulatorCommandLine {
        var result = FCMSimulatorCommandLine()
        var reader = FlagReader(arguments)
        func value(for flag: String, inline: String?) throws(ConfigurationError) -> String {
            try reader.value(for: flag, inline: inline)
        }
        func port(_ flag: String, _ text: String) throws(ConfigurationError) -> Int {
            try FlagReader.integer(flag, text, 0...65_535)
        }
        func path(_ flag: String, _ text: String) throws(ConfigurationError) -> String {
            guard !text.isEmpty else { throw ConfigurationError(.invalidValue, setting: flag, message: "a file name is required") }
            return text
        }
        while let (flag, inline) = reader.next() {
            switch flag {
            case "--fcm":
                if let inline {
                    throw ConfigurationError(.invalidValue, setting: flag, message: "takes no value (\"\(inline)\" given)")
                }
            case "--quiet":
                result.quiet = true
            case "--fcm-port":
                result.port = try port(flag, try value(for: flag, inline: inline))
            case "--fcm-http-port":
                result.http1Port = try port(flag, try value(for: flag, inline: inline))
            case "--fcm-project":
                let text = try value(for: flag, inline: inline)
                guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
                    throw ConfigurationError(
                        .invalidValue, setting: flag, message: "\"\(text)\" is not a project id (letters, digits and hyphens)")
                }
                result.projectID = text
            case "--fcm-account-out":
                result.accountOutputPath = try path(flag, try value(for: flag, inline: inline))
            case "--ca-out":
                result.caOutputPath = try path(flag, try value(for: flag, inline: inline))
            case _ where apnsFlags.contains(flag):
                throw ConfigurationError(
                    .invalidValue, setting: flag, message: "is an option of the APNs simulator, which --fcm does not run; see islet sim --help")
            default:
                throw ConfigurationError(.unknownOption, setting: flag, message: "no such option; see islet sim --help")
            }
        }
        return result
    }

    /// The line `islet sim --fcm` prints once it listens: FCM's URL over HTTP/2 (for
    /// Islet's `--fcm-url`), the HTTP/1.1 URL (FCM for Google's Python clients, and
    /// the inspection API), and where the CA and the service account were written.
    public func banner(url: String, http1URL: String) -> String {
        "islet sim: FCM on \(url) (Islet's --fcm-url, with --fcm-ca-file and --fcm-allow-private), HTTP/1.1 and inspection on \(http1URL),"
            + " CA in \(caOutputPath), service account (project \(projectID)) in \(accountOutputPath)"
    }
}
