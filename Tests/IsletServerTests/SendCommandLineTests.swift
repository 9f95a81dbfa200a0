import APNs
import Foundation
import IsletCore
import IsletCrypto
import IsletTesting
import Testing

@testable import islet

/// `islet send`'s arguments, read without sending: every event, the environment,
/// and each bad argument named.
@Suite("islet send arguments")
struct SendCommandLineTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func parse(_ extra: [String], token: String = String(repeating: "AB", count: 32)) async throws -> SendCommandLine {
        try await withTemporaryDirectory { dir in
            let keyFile = dir.appendingPathComponent("AuthKey.p8")
            try P256.SigningKey.generate().pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            return try SendCommandLine.parse(
                ["--key", keyFile.path, "--key-id", "SENDKEY001", "--team-id", "SENDTEAM01", "--topic", "com.example.app",
                 "--token", token] + extra,
                now: now)
        }
    }

    func payload(_ command: SendCommandLine) throws -> [String: JSONValue] {
        guard case .object(let root) = try JSONValue(parsing: command.request.payload), case .object(let aps)? = root["aps"] else {
            Issue.record("no aps object")
            return [:]
        }
        return aps
    }

    @Test func productionUnlessSandboxIsAsked() async throws {
        let production = try await parse(["--event", "update", "--content-state", #"{"eta":5}"#])
        #expect(production.environment == .production)
        // An update without an alert goes at the priority that spares the budget.
        #expect(production.request.priority == .powerConsidered)
        #expect(production.client.url(for: production.environment).absoluteString == "https://api.push.apple.com")
        let sandbox = try await parse(["--event", "update", "--content-state", #"{"eta":5}"#, "--sandbox"])
        #expect(sandbox.environment == .sandbox)
        #expect(sandbox.client.url(for: sandbox.environment).absoluteString == "https://api.sandbox.push.apple.com")
        #expect(sandbox.requestDescription.hasPrefix("POST https://api.sandbox.push.apple.com/3/device/" + String(repeating: "ab", count: 32)))
    }

    @Test func anUpdateCarriesItsStateDatesAndPriority() async throws {
        let command = try await parse([
            "--event", "update", "--content-state", #"{"eta":5,"driver":"Ana"}"#, "--stale-date", "1800000600",
            "--relevance-score", "50", "--priority=5", "--apns-id", "5E1A7C2D-0000-4000-8000-000000000001",
        ])
        #expect(command.request.topic == "com.example.app.push-type.liveactivity")
        #expect(command.request.pushType == .liveactivity)
        #expect(command.request.priority == .powerConsidered)
        #expect(command.request.apnsID == "5e1a7c2d-0000-4000-8000-000000000001")
        #expect(command.request.deviceToken == String(repeating: "ab", count: 32))
        let aps = try payload(command)
        #expect(aps["event"] == .string("update"))
        #expect(aps["content-state"] == .object(["eta": .integer(5), "driver": .string("Ana")]))
        #expect(aps["stale-date"] == .integer(1_800_000_600))
        #expect(aps["relevance-score"]?.doubleValue == 50)
        #expect(aps["timestamp"] == .integer(1_800_000_000))
        #expect(aps["dismissal-date"] == nil)
        #expect(command.requestDescription.contains("apns-priority: 5"))
    }

    @Test func anEndMayCarryADismissalDateInISO8601() async throws {
        let command = try await parse([
            "--event", "end", "--content-state", #"{"eta":0}"#, "--dismissal-date", "2027-01-15T08:30:00Z", "--timestamp", "1799999999",
        ])
        let aps = try payload(command)
        #expect(aps["event"] == .string("end"))
        let dismissal = try #require(ISO8601DateFormatter().date(from: "2027-01-15T08:30:00Z"))
        #expect(aps["dismissal-date"] == .integer(Int64(dismissal.timeIntervalSince1970)))
        #expect(aps["timestamp"] == .integer(1_799_999_999))
        #expect(command.request.pushType == .liveactivity)
    }

    @Test func anAlertGoesToADeviceToken() async throws {
        let command = try await parse(["--event", "alert", "--alert-title", "Hi", "--alert-body", "There"])
        #expect(command.request.topic == "com.example.app")
        #expect(command.request.pushType == .alert)
        #expect(command.request.priority == .immediate)
    }

    @Test(arguments: [
        (["--event", "update"], "--content-state"),
        (["--event", "launch", "--content-state", "{}"], "--event"),
        (["--event", "update", "--content-state", "{eta"], "--content-state"),
        (["--event", "update", "--content-state", #"{"eta":5}"#, "--priority", "soon"], "--priority"),
        (["--event", "update", "--content-state", #"{"eta":5}"#, "--stale-date", "tomorrow"], "--stale-date"),
        (["--event", "update", "--content-state", #"{"eta":5}"#, "--apns-id", "not-a-uuid"], "--apns-id"),
        (["--event", "update", "--content-state", #"{"eta":5}"#, "--url", "nowhere"], "--url"),
        (["--event", "update", "--content-state", #"{"eta":5}"#, "--ca", "/nonexistent/ca.pem"], "--ca"),
        (["--event", "update", "--content-state", #"{"eta":5}"#, "--colour", "red"], "--colour"),
        (["--event", "update", "--content-state", #"{"eta":5}"#, "--topic"], "--topic"),
    ])
    func aBadArgumentIsNamed(extra: [String], named: String) async throws {
        do {
            _ = try await parse(extra)
            Issue.record("accepted \(extra)")
        } catch let error as ConfigurationError {
            #expect(error.setting == named, "\(error)")
        } catch let error as SendCommandLine.PayloadRuleBroken {
            #expect(error.error.field.contains(named.dropFirst(2)) || error.error.field == named, "\(error)")
        }
    }

    @Test func aMissingCredentialIsNamed() async throws {
        #expect(throws: ConfigurationError.self) { try SendCommandLine.parse(["--key-id", "K", "--event", "alert"], now: now) }
        do {
            _ = try SendCommandLine.parse(["--key-id", "K", "--event", "alert"], now: now)
        } catch let error as ConfigurationError {
            #expect(error.setting == "--key")
        }
    }
}
