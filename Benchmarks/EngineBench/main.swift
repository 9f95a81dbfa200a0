// EngineBench: what the APNs simulator engine costs per push, without its transport.
//
//     swift run -c release EngineBench [pushes per round] [rounds] [name filter]
//
// Names: "valid alert push", "valid liveactivity update", "refused push (BadTopic)",
// "alert push with an observer", "inspection".
//
// Each scenario starts a fresh engine with the default push history (20,000
// records), fills the history first so that every measured push also evicts an old
// record, and then times `SimulatorEngine.handle(_:connection:)` alone. Requests are
// built with fresh strings and bodies before each timed batch, as the HTTP/2
// transport would hand them over, so that the engine pays for whatever it keeps.
// Time is the thread's CPU time, so that other work on the machine shows less in
// the numbers.

import Foundation
import Simulators
#if canImport(Glibc)
import Glibc
#endif
import IsletCore
import IsletCrypto

let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
let pushesPerRound = arguments.first ?? 100_000
let rounds = arguments.dropFirst().first ?? 5
/// Runs only the scenarios whose name contains one of these words.
let filters = CommandLine.arguments.dropFirst().filter { Int($0) == nil }
/// Requests are built a few at a time, so that each is still in the cache when the
/// engine reads it, as it is when the transport has just parsed it.
let batchSize = 100

let keyID = "KEY1234567"
let teamID = "TEAM123456"
let appTopic = "com.example.app"
let liveActivityTopic = "com.example.app.push-type.liveactivity"

/// A request as the transport builds it: every string and the body freshly
/// allocated.
func request(path: String, headers: [(String, String)], body: String) -> SimulatorRequest {
    func fresh(_ text: String) -> String { String(decoding: Array(text.utf8), as: UTF8.self) }
    return SimulatorRequest(
        method: fresh("POST"), path: fresh(path),
        headers: headers.map { (name: fresh($0.0), value: fresh($0.1)) },
        body: Data(Array(body.utf8)))
}

func token(_ seed: Int) -> String {
    var generator = SeededRandomSource(seed: UInt64(seed) &+ 0x1234)
    return PushToken.make(byteCount: 32, using: &generator)
}

/// One benchmark: how to set up an engine, and the `index`th request to send it.
struct Scenario {
    var name: String
    var prepare: (SimulatorEngine) throws -> Void = { _ in }
    var request: (Int) -> SimulatorRequest
    var expectedStatus: Int
    var observe = false
}

let key = try P256.SigningKey.generate()
let providerToken = try JSONWebToken.signES256(
    keyID: keyID,
    claims: ["iss": .string(teamID), "iat": .integer(Int64(Date().timeIntervalSince1970))],
    key: key)

func apnsHeaders(topic: String, pushType: String, bodyBytes: Int) -> [(String, String)] {
    [
        ("authorization", "bearer \(providerToken)"),
        ("apns-topic", topic),
        ("apns-push-type", pushType),
        ("apns-priority", "10"),
        ("apns-expiration", "0"),
        ("user-agent", "h2load nghttp2/1.59.0"),
        ("content-length", String(bodyBytes)),
    ]
}

let alertBody = #"{"aps":{"alert":{"title":"Order on its way","body":"Arrives at 12:30"},"sound":"default"}}"#
let deviceTokens = (0..<1_000).map(token)
func alert(_ index: Int) -> SimulatorRequest {
    request(
        path: "/3/device/" + deviceTokens[index % deviceTokens.count],
        headers: apnsHeaders(topic: appTopic, pushType: "alert", bodyBytes: alertBody.utf8.count),
        body: alertBody)
}

let updateTokens = (0..<1_000).map { token(10_000 + $0) }
let firstTimestamp = Int64(Date().timeIntervalSince1970)
func update(_ index: Int) -> SimulatorRequest {
    // Each activity sees a newer timestamp on every round over the tokens.
    let timestamp = firstTimestamp + Int64(index / updateTokens.count)
    let body = #"{"aps":{"timestamp":\#(timestamp),"event":"update","content-state":{"driverName":"Anne","etaMinutes":12,"status":"on_the_way"},"stale-date":\#(timestamp + 900),"relevance-score":50}}"#
    return request(
        path: "/3/device/" + updateTokens[index % updateTokens.count],
        headers: apnsHeaders(topic: liveActivityTopic, pushType: "liveactivity", bodyBytes: body.utf8.count),
        body: body)
}

func badTopic(_ index: Int) -> SimulatorRequest {
    request(
        path: "/3/device/" + deviceTokens[index % deviceTokens.count],
        headers: apnsHeaders(topic: "com.example.app.", pushType: "alert", bodyBytes: alertBody.utf8.count),
        body: alertBody)
}

let scenarios = [
    Scenario(name: "valid alert push", request: alert, expectedStatus: 200),
    Scenario(
        name: "valid liveactivity update",
        prepare: { engine in
            for token in updateTokens { try engine.registerToken(token, kind: .liveActivityUpdate) }
        },
        request: update, expectedStatus: 200),
    Scenario(name: "refused push (BadTopic)", request: badTopic, expectedStatus: 400),
    Scenario(name: "alert push with an observer", request: alert, expectedStatus: 200, observe: true),
]

print("EngineBench: \(rounds) rounds of \(pushesPerRound) pushes, history full (20,000)")
for scenario in scenarios where filters.isEmpty || filters.contains(where: scenario.name.contains) {
    var perPush: [Double] = []
    for _ in 0..<rounds {
        let lines = Counter()
        var observer: (@Sendable (PushRecord) -> Void)?
        if scenario.observe { observer = { record in lines.add(record.summaryLine.utf8.count) } }
        let engine = SimulatorEngine(
            configuration: SimulatorConfiguration(
                environment: .sandbox,
                trustedKeys: [TrustedKey(keyID: keyID, teamID: teamID, publicKey: key.publicKey)]),
            clock: SystemWallClock(),
            random: SeededRandomSource(seed: 7),
            observer: observer)
        try scenario.prepare(engine)
        let connection = ConnectionID(1)
        var index = 0
        // Fill the history, untimed.
        while index < engine.configuration.pushHistoryLimit {
            let answer = engine.handle(scenario.request(index), connection: connection)
            precondition(answer.status == scenario.expectedStatus, "\(scenario.name): answered \(answer.status) \(answer.reason.map { "\($0)" } ?? "")")
            index += 1
        }
        var elapsed = 0.0
        var done = 0
        while done < pushesPerRound {
            let count = min(batchSize, pushesPerRound - done)
            let batch = (0..<count).map { scenario.request(index + $0) }
            var statuses = 0
            let start = threadCPUSeconds()
            for request in batch {
                statuses &+= engine.handle(request, connection: connection).status
            }
            elapsed += threadCPUSeconds() - start
            precondition(statuses == scenario.expectedStatus * count, "\(scenario.name): unexpected answers")
            index += count
            done += count
        }
        perPush.append(elapsed / Double(pushesPerRound) * 1e6)
    }
    perPush.sort()
    let median = perPush[perPush.count / 2]
    let line = scenario.name.padding(toLength: 34, withPad: " ", startingAt: 0)
    print("\(line) median \(String(format: "%6.2f", median)) µs/push  best \(String(format: "%6.2f", perPush[0])) µs/push  (\(Int(1e6 / median)) pushes/s)")
}

// Reading the history: what `pushes()` costs with the history full of alert pushes,
// and what encoding it for the inspection API costs after.
if filters.isEmpty || filters.contains(where: "inspection".contains) {
    let engine = SimulatorEngine(
        configuration: SimulatorConfiguration(
            environment: .sandbox, trustedKeys: [TrustedKey(keyID: keyID, teamID: teamID, publicKey: key.publicKey)]),
        clock: SystemWallClock(), random: SeededRandomSource(seed: 7))
    for index in 0..<engine.configuration.pushHistoryLimit { _ = engine.handle(alert(index), connection: ConnectionID(1)) }
    var reading: [Double] = []
    var encoding: [Double] = []
    for _ in 0..<rounds {
        var start = threadCPUSeconds()
        let records = engine.pushes()
        reading.append((threadCPUSeconds() - start) * 1e3)
        start = threadCPUSeconds()
        let json = try JSONEncoder().encode(["pushes": records])
        encoding.append((threadCPUSeconds() - start) * 1e3)
        precondition(records.count == engine.configuration.pushHistoryLimit && !json.isEmpty)
    }
    reading.sort()
    encoding.sort()
    let line = "pushes() of a full history".padding(toLength: 34, withPad: " ", startingAt: 0)
    print("\(line) median \(String(format: "%6.1f", reading[reading.count / 2])) ms, then JSON \(String(format: "%6.1f", encoding[encoding.count / 2])) ms")
}

/// The CPU time the calling thread has used, in seconds.
func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// A running total the observer adds to, so that its work is not optimised away.
final class Counter: @unchecked Sendable {
    // Only the thread that calls `handle` touches it.
    private var total = 0
    func add(_ value: Int) { total &+= value }
}
