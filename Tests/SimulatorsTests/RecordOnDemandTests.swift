import Foundation
import IsletCore
import IsletSync
@testable import Simulators
import Testing

/// The history keeps each push packed and builds its ``PushRecord`` when asked: the
/// record must be what was received and answered, whether it is built at once for
/// the observer or later for ``SimulatorEngine/pushes(after:)``.
@Suite("Simulator: records built on demand")
struct RecordOnDemandTests {
    /// Pushes of every kind: accepted, dropped, refused at each step, with repeated
    /// and unusual headers, odd paths and bodies.
    static func sendVariety(_ sim: SimulatorHarness) throws {
        let device = SimulatorHarness.token(0x61)
        let pushToStart = SimulatorHarness.token(0x62)
        sim.sendAlert(to: device)
        sim.sendAlert(to: device.uppercased())
        sim.send(to: pushToStart, payload: SimulatorHarness.start(timestamp: sim.now))
        let updateToken = try #require(sim.engine.tokens().first { $0.kind == .liveActivityUpdate }?.token)
        sim.clock.advance(by: 1)
        sim.send(to: updateToken, payload: SimulatorHarness.update(timestamp: sim.now))
        sim.send(to: updateToken, payload: SimulatorHarness.update(timestamp: sim.now))  // dropped: not newer
        sim.send(to: updateToken, payload: SimulatorHarness.update("end", timestamp: sim.now + 1, contentState: nil))
        sim.send(to: device, headers: ["apns-id": "0D8E7F6A-1B2C-4D3E-8F9A-0B1C2D3E4F5A"], extraHeaders: [("x-trace", "é✓")])
        sim.send(to: device, headers: ["apns-id": "not-a-uuid"])
        sim.send(to: device, extraHeaders: [("apns-priority", "5")])
        sim.send(to: device, extraHeaders: [("authorization", "bearer short")])
        sim.send(to: device, headers: ["authorization": "Bearer"])
        sim.send(to: device, headers: ["authorization": "nospace"])
        sim.send(to: device, method: "GET")
        sim.send(to: device, path: "/3/device/")
        sim.send(to: device, path: "/3/devices/\(device)")
        sim.send(to: device, path: "/3/device/zz\(device)")
        sim.send(to: device, path: "/3/device/é\(device)")
        sim.send(to: device, topic: "com.example.app.")
        sim.send(to: device, body: Data())
        sim.send(to: device, body: Data("not json".utf8))
        sim.send(to: device, body: Data(#"{"aps":{"alert":"x"},"aps":{"event":"update"}}"#.utf8))
        sim.send(to: device, body: Data(#"{"aps":{"event":"upd\u0061te","timestamp":1.8e9}}"#.utf8))
        sim.send(to: device, body: Data(#"{"aps":{"alert":"👋"}}"#.utf8), pushType: "alert", topic: SimulatorHarness.appTopic)
        sim.send(to: device, body: Data(repeating: UInt8(ascii: " "), count: 6000))
        sim.send(to: device, pushType: "alert", topic: SimulatorHarness.appTopic, connection: 2, providerToken: "garbage")
    }

    @Test func theObserverAndTheHistoryGetTheSameRecords() throws {
        let observed = Lock<[PushRecord]>([])
        let sim = try SimulatorHarness(observer: { record in observed.withLock { $0.append(record) } })
        try Self.sendVariety(sim)
        let recorded = sim.engine.pushes()
        #expect(recorded.count == observed.withLock { $0.count })
        #expect(recorded == observed.withLock { $0 })
    }

    @Test func recordsHoldWhatWasReceived() throws {
        let sim = try SimulatorHarness()
        try Self.sendVariety(sim)
        // Compare each request's record with one made here from the request itself.
        for request in Self.requests(sim) {
            let response = sim.engine.handle(request, connection: ConnectionID(3))
            let record = try #require(sim.engine.pushes(after: response.sequence - 1).first)
            #expect(record.sequence == response.sequence)
            #expect(record.method == request.method)
            #expect(record.path == request.path)
            #expect(record.token == Self.expectedToken(request.path))
            #expect(record.pushType == request.headers.first { $0.name == "apns-push-type" }?.value)
            #expect(record.headers == Self.expectedHeaders(request.headers))
            let payload = request.body.isEmpty ? nil : try? JSONValue(parsing: request.body)
            #expect(record.payload == payload)
            #expect(record.event == payload?["aps"]?["event"]?.stringValue)
            #expect(record.payloadBytes == request.body.count)
            #expect(record.answer.status == response.status)
            #expect(record.answer.reason == response.reason)
            #expect(record.answer.apnsID == response.header("apns-id"))
            #expect(record.answer.apnsUniqueID == response.header("apns-unique-id"))
        }
    }

    @Test func recordsSurviveTheRingAndReset() throws {
        let sim = try SimulatorHarness(pushHistoryLimit: 7)
        let observed = Lock<[PushRecord]>([])
        let watched = try SimulatorHarness(
            pushHistoryLimit: 7, observer: { record in observed.withLock { $0.append(record) } })
        try Self.sendVariety(sim)
        try Self.sendVariety(watched)
        #expect(sim.engine.pushes().count == 7)
        #expect(watched.engine.pushes() == Array(observed.withLock { $0 }.suffix(7)))
        watched.engine.reset()
        #expect(watched.engine.pushes().isEmpty)
    }

    @Test func summaryLinesShortenTokensAsRedactionDoes() throws {
        let sim = try SimulatorHarness()
        let tokens = [
            SimulatorHarness.token(0x64), "abc", "abcdefghijkl", "zz" + SimulatorHarness.token(0x65), "é" + SimulatorHarness.token(0x66),
            "ab\r\ncdefghijklmn", "e\u{301}e\u{301}e\u{301}e\u{301}e\u{301}e\u{301}e\u{301}", "👋👋👋👋👋👋👋👋👋👋👋👋",
        ]
        for token in tokens {
            sim.send(to: token, pushType: "alert", topic: SimulatorHarness.appTopic)
            let record = try #require(sim.lastRecord)
            #expect(record.token == token)
            #expect(record.summaryLine.contains(" \(Redaction.redact(token)) → "), "\(record.summaryLine)")
        }
    }

    // MARK: - The request's parts, as the record should show them

    static func requests(_ sim: SimulatorHarness) -> [SimulatorRequest] {
        let token = SimulatorHarness.token(0x63)
        let auth = "bearer \(sim.providerToken)"
        let alert = Data(SimulatorHarness.alert().jsonText.utf8)
        return [
            SimulatorRequest(path: "/3/device/\(token)", headers: [
                ("authorization", auth), ("apns-topic", SimulatorHarness.appTopic), ("apns-push-type", "alert"),
                ("user-agent", "h2load nghttp2/1.59.0"), ("content-length", String(alert.count)),
            ], body: alert),
            SimulatorRequest(path: "/3/device/\(token.uppercased())", headers: [
                ("authorization", auth), ("apns-topic", SimulatorHarness.appTopic), ("x-b", "1"), ("x-b", "2"),
            ], body: alert),
            SimulatorRequest(method: "PUT", path: "/3/device/\(token)", headers: [("authorization", "bearer x")], body: alert),
            SimulatorRequest(path: "/3/device/abc", headers: [], body: Data()),
            SimulatorRequest(path: "/", headers: [("authorization", "x")], body: Data("[1]".utf8)),
            SimulatorRequest(path: "/3/device/\(token)", headers: [
                ("authorization", auth), ("apns-topic", SimulatorHarness.appTopic), ("apns-id", "not-a-uuid"),
            ], body: Data(#"{"aps":{}}"#.utf8)),
            SimulatorRequest(path: "/3/device/\(token)", headers: [
                ("authorization", auth), ("apns-topic", SimulatorHarness.appTopic),
                ("apns-id", "0d8e7f6a-1b2c-4d3e-8f9a-0b1c2d3e4f5a"), ("x-\u{37E}", "a"), ("x-;", "b"),
            ], body: alert),
            SimulatorRequest(path: "/3/device/\(token)", headers: [
                ("authorization", "bearer \u{E9}\u{301}abcdefghijklmn"), ("apns-topic", "é"),
            ], body: Data(#"{"x":"\u00e9","aps":{"alert":{"title":"Ünïcode"}}}"#.utf8)),
        ]
    }

    static func expectedToken(_ path: String) -> String? {
        let prefix = "/3/device/"
        guard path.hasPrefix(prefix), path.count > prefix.count else { return nil }
        return String(path.dropFirst(prefix.count))
    }

    /// Repeated names joined with ", ", the provider token shortened to its scheme,
    /// six characters and its length.
    static func expectedHeaders(_ list: [(name: String, value: String)]) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in list {
            var shown = value
            if name == "authorization" {
                let bytes = Array(value.utf8)
                if let space = bytes.firstIndex(of: UInt8(ascii: " ")) {
                    let scheme = String(decoding: bytes[..<space], as: UTF8.self)
                    let token = bytes[(space + 1)...]
                    let visible = token.count >= 12 ? String(decoding: token.prefix(6), as: UTF8.self) : ""
                    shown = "\(scheme) \(visible)…(\(token.count))"
                } else {
                    shown = "…(\(bytes.count))"
                }
            }
            headers[name] = headers[name].map { $0 + ", " + shown } ?? shown
        }
        return headers
    }
}

@Suite("Simulator: packed requests")
struct PackedRequestTests {
    @Test func aPackedRequestUnpacksAsItWas() {
        let requests = [
            SimulatorRequest(path: "/3/device/abc", headers: [], body: Data()),
            SimulatorRequest(method: "", path: "", headers: [("", "")], body: Data([0])),
            SimulatorRequest(
                method: "POST", path: "/3/device/\(String(repeating: "ab", count: 256))",
                headers: [
                    ("authorization", "bearer " + String(repeating: "x", count: 300)), ("apns-topic", "com.example.app"),
                    ("x-é", "✓ 👋"), ("x-e\u{301}", ""), ("a", "b"), ("a", "c"),
                ],
                body: Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) })),
        ]
        for request in requests {
            let packed = PackedRequest(request)
            let unpacked = packed.unpacked()
            #expect(unpacked.method == request.method)
            #expect(unpacked.path == request.path)
            #expect(unpacked.headers.map(\.name) == request.headers.map(\.name))
            #expect(unpacked.headers.map(\.value) == request.headers.map(\.value))
            #expect(unpacked.headers.map { Array($0.name.utf8) } == request.headers.map { Array($0.name.utf8) })
            #expect(unpacked.body == request.body)
            #expect(packed.withBody { Data($0) } == request.body)
        }
    }

    @Test func aBodyThatIsASliceIsPackedFromItsOwnBytes() {
        let whole = Data("xx{\"aps\":{}}yy".utf8)
        let slice = whole[2..<(whole.count - 2)]
        let packed = PackedRequest(SimulatorRequest(path: "/", headers: [], body: slice))
        #expect(packed.unpacked().body == Data("{\"aps\":{}}".utf8))
    }
}

@Suite("Simulator: minted ids")
struct MintedMessageIDTests {
    @Test func mintedIDsReadAsAPNsMessageIDWritesThem() {
        for seed in UInt64(0)..<2000 {
            var minting = SeededRandomSource(seed: seed)
            var reference = SeededRandomSource(seed: seed)
            let minted = MintedMessageID(drawingFrom: &minting)
            #expect(minted.text == APNsMessageID.make(using: &reference))
            #expect(APNsMessageID.isCanonical(minted.text))
            // Both drew the same number of words.
            #expect(minting.next() == reference.next())
        }
    }

    @Test func extremeWordsToo() {
        struct Fixed: RandomNumberGenerator {
            var words: [UInt64]
            mutating func next() -> UInt64 { words.removeFirst() }
        }
        let words: [UInt64] = [0, .max, 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0xA5A5_A5A5_5A5A_5A5A]
        for high in words {
            for low in words {
                var minting = Fixed(words: [high, low])
                var reference = Fixed(words: [high, low])
                #expect(MintedMessageID(drawingFrom: &minting).text == APNsMessageID.make(using: &reference))
            }
        }
    }
}
