import Foundation
import IsletCore
import IsletCrypto
import IsletTesting
import Simulators

/// The fan-out's wire reference: h2load sending the fan-out's own push (its headers
/// and payload, under a provider token of the same key) to the same simulator, once
/// to each distinct token the fan-out reaches, on one connection as the server's
/// pool uses. The simulator does the same work for each push on both sides (an
/// update to a token it does not know is answered 200 and dropped by the device
/// alike), so the ratio measures what Islet adds around the wire.
struct WireReference {
    let h2load: String
    let port: Int
    let count: Int
    let arguments: [String]

    /// `push` is a record of the fan-out's update (headers and payload) as the
    /// simulator received it; `tokens` the fan-out's tokens. Writes the URI list
    /// and the body into `work`.
    init(
        h2load: String, simulatorPort port: Int, push: PushRecord, tokens: [String], signingKey: P256.SigningKey,
        work: String
    ) throws {
        self.h2load = try Self.executable(h2load)
        self.port = port
        count = tokens.count
        let uris = work + "/wire-uris.txt"
        // `-i`: one URI per line, each used once by the one client, in order.
        let lines = tokens.map { "https://127.0.0.1:\(port)\(APNsPath.device($0))" }
        try (lines.joined(separator: "\n") + "\n").write(toFile: uris, atomically: true, encoding: .utf8)
        let body = work + "/wire-body.json"
        try Data((push.payload ?? [:]).jsonText.utf8).write(to: URL(fileURLWithPath: body))
        let jwt = try JSONWebToken.signES256(
            keyID: "BENCHKEY01",
            claims: ["iss": .string("BENCHTEAM1"), "iat": .integer(Int64(Date().timeIntervalSince1970))], key: signingKey)
        // The push's own headers, but its provider token (shortened in the record)
        // and its apns-id (one per push; h2load would repeat one).
        var headers = ["authorization: bearer \(jwt)"]
        for (name, value) in push.headers.sorted(by: { $0.key < $1.key })
        where name.hasPrefix("apns-") && name != "apns-id" {
            headers.append("\(name): \(value)")
        }
        arguments = ["-n", String(tokens.count), "-c", "1", "-m", "100", "-i", uris, "-d", body]
            + headers.flatMap { ["-H", $0] }
    }

    /// One run: every token once. Answers the pushes answered 200 per second.
    ///
    /// h2load opens its streams before the simulator's first SETTINGS arrive, which
    /// allow one stream until the connection shows a valid provider token (as APNs
    /// does): up to `-m` of the first streams may be refused, as no push. Those are
    /// left out of the rate; more than that, or an answer other than 200, fails.
    func run() throws -> Double {
        let process = try Subprocess(h2load, arguments, standardOutput: .collect, standardError: .collect)
        let deadline = ContinuousClock.now + .seconds(1800)
        while process.isRunning && ContinuousClock.now < deadline { usleep(20_000) }
        guard !process.isRunning else {
            process.stop()
            throw BenchHTTP.Failure(description: "h2load did not end within 30 minutes")
        }
        while !process.standardOutputClosed { usleep(5_000) }
        let output = process.standardOutput
        let succeeded = Self.number(before: " succeeded", in: output).map { Int($0) } ?? 0
        let answered = Self.number(before: " 2xx", in: output).map { Int($0) } ?? -1
        guard succeeded >= count - 100, answered == succeeded, let seconds = Self.seconds(in: output), seconds > 0 else {
            throw BenchHTTP.Failure(
                description: "h2load did not get \(count) answers of 200: \(output.suffix(600)) \(process.standardError.suffix(300))")
        }
        return Double(succeeded) / seconds
    }

    /// The number just before `suffix` in `text` (`9901 succeeded`, `9901 2xx`).
    private static func number(before suffix: String, in text: String) -> Double? {
        guard let end = text.range(of: suffix) else { return nil }
        let digits = text[..<end.lowerBound].reversed().prefix { $0.isNumber || $0 == "." }
        return Double(String(digits.reversed()))
    }

    /// The run's length from `finished in 372.41ms, …` (or `1.23s`), in seconds.
    private static func seconds(in text: String) -> Double? {
        guard let start = text.range(of: "finished in ") else { return nil }
        let rest = text[start.upperBound...]
        let digits = rest.prefix { $0.isNumber || $0 == "." }
        guard let value = Double(digits) else { return nil }
        return rest.dropFirst(digits.count).hasPrefix("ms") ? value / 1000 : value
    }

    /// `name` as a path: itself when it holds a `/`, else the first match on `PATH`.
    private static func executable(_ name: String) throws -> String {
        if name.contains("/") { return name }
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for folder in folders where FileManager.default.isExecutableFile(atPath: "\(folder)/\(name)") {
            return "\(folder)/\(name)"
        }
        throw BenchHTTP.Failure(description: "\(name) is not on PATH (Benchmarks/run.sh installs nghttp2-client)")
    }
}
