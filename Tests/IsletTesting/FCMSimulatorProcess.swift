public import Foundation

/// `islet sim --fcm` run as a developer runs it: the built executable, in a folder
/// of the test's (where it writes its CA and its service account under their
/// default names), on free ports, found through the banner it prints. ``stop()``
/// kills it if it still runs (call it from a `defer`); ``terminate()`` asks it to
/// stop as a service manager does.
public final class FCMSimulatorProcess: Sendable {
    /// The child process; its standard output holds the banner and a line per message.
    public let process: ChildProcess
    /// The banner line.
    public let banner: String
    /// FCM over HTTP/2 and TLS (Islet's `--fcm-url`).
    public let url: String
    /// FCM over plain HTTP/1.1, and the inspection API.
    public let http1URL: String
    /// The HTTP/1.1 port.
    public let http1Port: Int
    /// The CA it wrote (`islet-fcm-ca.pem` in the folder).
    public let caFile: URL
    /// The service account it wrote (`islet-fcm-account.json` in the folder).
    public let accountFile: URL

    private init(process: ChildProcess, banner: String, url: String, http1URL: String, http1Port: Int, directory: URL) {
        self.process = process
        self.banner = banner
        self.url = url
        self.http1URL = http1URL
        self.http1Port = http1Port
        caFile = directory.appendingPathComponent("islet-fcm-ca.pem")
        accountFile = directory.appendingPathComponent("islet-fcm-account.json")
    }

    /// Starts `islet sim --fcm --fcm-port 0 --fcm-http-port 0` (and `arguments`) in
    /// `directory` and waits up to `deadline` for its banner; a process that prints
    /// none is stopped and its standard error thrown.
    public static func start(
        in directory: URL, arguments: [String] = [], within deadline: Duration = .seconds(60)
    ) async throws -> FCMSimulatorProcess {
        let executable = builtProductPath("islet")
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw RawHTTPError("the islet executable is not built at \(executable)")
        }
        let process = try ChildProcess(
            executable, ["sim", "--fcm", "--fcm-port", "0", "--fcm-http-port", "0"] + arguments, directory: directory.path)
        guard let banner = await process.line(within: deadline, where: { $0.hasPrefix("islet sim: FCM on ") }) else {
            process.stop()
            throw RawHTTPError("islet sim --fcm printed no banner: \(process.lines) \(process.standardError)")
        }
        let urls = banner.split(separator: " ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ",()")) }
        guard let url = urls.first(where: { $0.hasPrefix("https://") }), let http1URL = urls.first(where: { $0.hasPrefix("http://") }),
            let http1Port = http1URL.split(separator: ":").last.flatMap({ Int($0) })
        else {
            process.stop()
            throw RawHTTPError("the banner names no URLs: \(banner)")
        }
        return FCMSimulatorProcess(process: process, banner: banner, url: url, http1URL: http1URL, http1Port: http1Port, directory: directory)
    }

    /// Sends SIGTERM and waits up to `deadline` for the exit; answers its status
    /// (`nil` if it still runs).
    public func terminate(within deadline: Duration = .seconds(60)) async -> Int32? {
        process.terminate()
        return await process.exitStatus(within: deadline)
    }

    /// Kills and reaps the process if it still runs.
    public func stop() {
        process.stop()
    }
}
