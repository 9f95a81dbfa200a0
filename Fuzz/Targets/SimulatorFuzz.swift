#if DEBUG
import Foundation
import IsletCore
import IsletCrypto
@testable import Simulators

/// A push request built from the bytes, through the simulator's engine: every header
/// check, the provider token check and the payload reader. The body is also read by
/// the payload scanner on its own, which must agree with the JSON parser it stands
/// in for.
///
/// The input is text: a first line `METHOD PATH`, then `name: value` header lines up
/// to an empty line, then the body. A header value `$JWT` becomes `bearer` and a
/// provider token the engine trusts; `$START`, `$UPDATE` and `$DEVICE` in the path
/// become tokens the simulated devices hold, and `$CHANNEL` (in the path, a header
/// value or the body) the id of a broadcast channel the engine holds. A path under
/// `/1/` goes to the channel management API.
public enum SimulatorFuzz {
    static let startToken = String(repeating: "a1", count: 32)
    static let updateToken = String(repeating: "b2", count: 32)
    static let deviceToken = String(repeating: "c3", count: 32)

    private struct Setup: Sendable {
        let engine: SimulatorEngine
        let authorization: String
    }

    private static let setup: Setup = {
        let clock = ManualWallClock()
        let key = try! P256.SigningKey.generate()
        let configuration = SimulatorConfiguration(
            trustedKeys: [TrustedKey(keyID: "KEY1234567", teamID: "TEAM123456", publicKey: key.publicKey)],
            pushHistoryLimit: 64)
        let engine = SimulatorEngine(configuration: configuration, clock: clock, random: SeededRandomSource(seed: 1))
        let token = try! JSONWebToken.signES256(
            keyID: "KEY1234567",
            claims: ["iss": .string("TEAM123456"), "iat": .integer(Int64(clock.now().timeIntervalSince1970))], key: key)
        return Setup(engine: engine, authorization: "bearer \(token)")
    }()

    public static func run(_ bytes: UnsafeRawBufferPointer) {
        let body = checkScanner(bytes)
        guard let request = request(from: bytes, body: body) else { return }
        let engine = setup.engine
        // Every input meets the same devices: forget what the last one did.
        engine.reset()
        _ = try? engine.registerToken(startToken, kind: .pushToStart)
        _ = try? engine.registerToken(updateToken, kind: .liveActivityUpdate)
        _ = try? engine.registerToken(deviceToken, kind: .device)
        let created = engine.handleChannelRequest(
            SimulatorRequest(
                method: "POST", path: "/1/apps/com.example.app/channels",
                headers: [("authorization", setup.authorization)],
                body: Data(#"{"message-storage-policy":1,"push-type":"LiveActivity"}"#.utf8)),
            connection: ConnectionID(2))
        let channel = created.header(APNsHeaderName.channelID) ?? ""
        let substituted = Self.substituting(channel, in: request)
        let response = substituted.path.hasPrefix("/1/")
            ? engine.handleChannelRequest(substituted, connection: ConnectionID(1))
            : engine.handle(substituted, connection: ConnectionID(1))
        if fuzzVerbose { print(response.status, response.reason.map { "\($0)" } ?? "", engine.pushes().last.map { "\($0.deviceOutcome) \($0.deviceNote ?? "")" } ?? "") }
        guard (200...599).contains(response.status) else { fatalError("status \(response.status)") }
        // What the inspection API would serve of it.
        _ = try? JSONEncoder().encode(engine.pushes().suffix(1))
        _ = try? JSONEncoder().encode(engine.activities())
    }

    /// The request of the input, when its first line is `METHOD PATH`.
    static func request(from bytes: UnsafeRawBufferPointer, body: (Int) -> Data) -> SimulatorRequest? {
        var lines: [String] = []
        var start = 0
        var bodyStart: Int?
        for index in bytes.indices where bytes[index] == 0x0A {
            let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            start = index + 1
            if line.isEmpty && !lines.isEmpty {
                bodyStart = start
                break
            }
            lines.append(line)
        }
        if bodyStart == nil {
            lines.append(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start...]), as: UTF8.self))
        }
        guard let first = lines.first, let space = first.firstIndex(of: " ") else { return nil }
        let method = String(first[..<space])
        let path = String(first[first.index(after: space)...])
            .replacingOccurrences(of: "$START", with: startToken)
            .replacingOccurrences(of: "$UPDATE", with: updateToken)
            .replacingOccurrences(of: "$DEVICE", with: deviceToken)
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            var value = String(line[line.index(after: colon)...])
            if value.first == " " { value.removeFirst() }
            if value == "$JWT" { value = setup.authorization }
            headers.append((String(line[..<colon]), value))
        }
        return SimulatorRequest(method: method, path: path, headers: headers, body: bodyStart.map(body) ?? Data())
    }

    /// `request` with `$CHANNEL` replaced by `channel` in its path, header values and
    /// body.
    static func substituting(_ channel: String, in request: SimulatorRequest) -> SimulatorRequest {
        let marker = "$CHANNEL"
        var headers: [(name: String, value: String)] = []
        for index in 0..<request.fields.count {
            headers.append((request.fields.name(at: index), request.fields.value(at: index).replacingOccurrences(of: marker, with: channel)))
        }
        var body = request.body
        if let text = String(data: body, encoding: .utf8), text.contains(marker) {
            body = Data(text.replacingOccurrences(of: marker, with: channel).utf8)
        }
        return SimulatorRequest(
            method: request.method, path: request.path.replacingOccurrences(of: marker, with: channel), headers: headers,
            body: body)
    }

    /// Reads the body (from its offset in `bytes`) as the engine's payload reader
    /// does, with and without the Live Activity members, and checks the answer
    /// against the JSON parser's reading. Answers the body reader.
    static func checkScanner(_ bytes: UnsafeRawBufferPointer) -> (Int) -> Data {
        return { offset in
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let body = Data(slice)
            let expected = reference(body)
            for liveActivity in [false, true] {
                var fields = APSFields()
                let outcome: Result<APSFields, PushPayload.Problem> = body.withUnsafeBytes { raw in
                    do throws(PushPayload.Problem) {
                        try PushPayload.read(body, bytes: raw, liveActivity: liveActivity, into: &fields)
                        return .success(fields)
                    } catch {
                        return .failure(error)
                    }
                }
                switch (outcome, expected) {
                case (.failure(let got), .failure(let want)) where got == want: break
                case (.success(let got), .success(let want)):
                    let same = liveActivity ? got == want : got.hasAlert == want.hasAlert
                    if !same { fatalError("the payload reader read \(got), the parser \(want), liveActivity \(liveActivity)") }
                default:
                    fatalError("the payload reader answered \(outcome), the parser \(expected), liveActivity \(liveActivity)")
                }
            }
            return body
        }
    }

    /// What the JSON parser makes of a body.
    static func reference(_ body: Data) -> Result<APSFields, PushPayload.Problem> {
        guard let parsed = try? JSONValue(parsing: body, repeatedKeys: .lastWins) else { return .failure(.notJSON) }
        guard let object = parsed.objectValue else { return .failure(.notObject) }
        guard let aps = object["aps"] else { return .failure(.noAPS) }
        guard let members = aps.objectValue else { return .failure(.apsNotObject) }
        return .success(APSFields(members))
    }
}
#else
/// Needs the debug build's testable modules.
public enum SimulatorFuzz {
    public static func run(_ bytes: UnsafeRawBufferPointer) {}
}
#endif
