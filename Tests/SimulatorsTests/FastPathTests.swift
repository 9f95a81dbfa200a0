import Foundation
import HTTP2
import IsletCore
@testable import Simulators
import Testing

/// The engine reads the usual request on bytes, without dictionaries or a full JSON
/// tree; each such reading must agree with the plain one it stands for.
@Suite("Simulator: fast paths agree with the plain reading")
struct FastPathTests {
    // MARK: - Header fields

    @Test func headerFieldsFindTheFirstOfEachName() {
        let names = [
            APNsHeaderName.authorization, APNsHeaderName.topic, APNsHeaderName.pushType, APNsHeaderName.priority,
            APNsHeaderName.id, APNsHeaderName.collapseID, APNsHeaderName.expiration,
        ]
        var random = SeededRandomSource(seed: 11)
        let pool = names + ["user-agent", "content-length", "apns-topics", "Apns-Topic", "x", ""]
        for round in 0..<500 {
            let count = Int(random.next() % 12)
            let list = (0..<count).map { index in
                (name: pool[Int(random.next() % UInt64(pool.count))], value: "v\(round).\(index)")
            }
            let fields = HeaderFields(HTTP2HeaderFields(list))
            // Names match without regard to case ("Apns-Topic" is apns-topic).
            func first(_ name: String) -> String? { list.first { $0.name.lowercased() == name }?.value }
            #expect(fields.authorization == first(APNsHeaderName.authorization))
            #expect(fields.topic == first(APNsHeaderName.topic))
            #expect(fields.pushType == first(APNsHeaderName.pushType))
            #expect(fields.priority == first(APNsHeaderName.priority))
            #expect(fields.id == first(APNsHeaderName.id))
            #expect(fields.collapseID == first(APNsHeaderName.collapseID))
            #expect(fields.expiration == first(APNsHeaderName.expiration))
        }
    }

    @Test func repeatedNamesAreFoundAsADictionaryWouldFindThem() {
        // Field names are compared as bytes, as HTTP compares them: names Unicode
        // spells two ways are two names.
        let pool = [
            "apns-topic", "apns-id", "authorization", "x-é", "x-e\u{301}", "x-;", "x-\u{37E}", "K", "\u{212A}", "a",
            "b", "é", "e\u{301}", "", "x-\u{37E}\u{301}", "x-;\u{301}", "apns-expiration", "user-agent",
        ]
        var random = SeededRandomSource(seed: 12)
        for _ in 0..<3000 {
            let count = Int(random.next() % 40)
            let list = (0..<count).map { _ in (name: pool[Int(random.next() % UInt64(pool.count))], value: "") }
            var seen: [[UInt8]: Bool] = [:]
            var expected: [UInt8]?
            for (name, _) in list where seen.updateValue(true, forKey: Array(name.utf8)) != nil {
                expected = Array(name.utf8)
                break
            }
            #expect(HeaderFields(HTTP2HeaderFields(list)).repeatedName().map { Array($0.utf8) } == expected)
        }
    }

    // MARK: - Device paths and tokens

    @Test func hexDigitsAreCheckedAsOneByOne() {
        let alphabet = Array("0123456789abcdefABCDEF/:@G`gz\u{0}".utf8) + [0x7F, 0x80, 0xC3, 0xFF]
        var random = SeededRandomSource(seed: 13)
        for _ in 0..<5000 {
            let count = Int(random.next() % 40)
            let hexOnly = random.next() % 2 == 0
            let bytes = (0..<count).map { _ in
                hexOnly ? alphabet[Int(random.next() % 22)] : alphabet[Int(random.next() % UInt64(alphabet.count))]
            }
            let isHex = bytes.allSatisfy(Self.isHexDigit)
            let expected: Bool? = isHex ? bytes.contains { (UInt8(ascii: "A")...UInt8(ascii: "F")).contains($0) } : nil
            #expect(bytes.withUnsafeBytes { HexDigits.check($0) } == expected)
        }
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }

    @Test func devicePathsAreReadAsTheirCharacters() throws {
        #expect(String(describing: RequestChecks.devicePrefix) == APNsPath.devicePrefix)
        let sim = try SimulatorHarness()
        let hex = SimulatorHarness.token(0x7A)
        let paths = [
            "/3/device/\(hex)", "/3/device/\(hex.uppercased())", "/3/device/\(String(repeating: "aB", count: 256))",
            "/3/device/\(String(repeating: "ab", count: 257))", "/3/device/\(String(repeating: "a", count: 63))",
            "/3/device/\(String(repeating: "ab", count: 31))", "/3/device/\(hex)g", "/3/device/\(hex.dropLast())z",
            "/3/device//\(hex.dropFirst())", "/3/Device/\(hex)", "/3/device\(hex)", "/3/device/\u{301}\(hex)",
            "/3/device/\(hex)\u{301}", "/3/device/\(hex.dropLast(2))é", "/3/device/",
        ]
        for path in paths {
            let response = sim.send(to: hex, pushType: "alert", topic: SimulatorHarness.appTopic, path: path)
            let token = path.hasPrefix("/3/device/") ? String(path.dropFirst(10)) : nil
            let wellFormed = path.hasPrefix("/3/device/") && token.map(PushToken.isWellFormed) == true
            #expect((response.status == 200) == wellFormed, "\(path)")
            let record = try #require(sim.lastRecord)
            #expect(record.token == (path.count > 10 ? token : nil), "\(path)")
        }
        // The devices know a token in lowercase, whatever case it was sent in.
        #expect(sim.engine.tokens().map(\.token).allSatisfy { $0 == $0.lowercased() })
    }

    // MARK: - apns headers

    @Test func topicsFitAsThePushTypeSays() {
        var topics = ["com.example.app", "a", "x.y.z"]
        for suffix in APNsPushType.allCases.compactMap(\.topicSuffix) {
            topics += [suffix, "a" + suffix, "com.example.app" + suffix, suffix + "x", "com" + suffix + suffix]
        }
        topics += topics.map { $0 + "-" } + topics.map { "-" + $0 }
        for pushType in APNsPushType.allCases {
            for topic in topics {
                #expect(RequestChecks.fits(pushType, topic: topic) == pushType.fits(topic: topic), "\(pushType) \(topic)")
            }
        }
    }

    @Test func prioritiesAreReadAsAPNsPriorityReadsThem() throws {
        let sim = try SimulatorHarness()
        let token = SimulatorHarness.token(0x7B)
        for value in ["10", "5", "1", "0", "7", "010", "10 ", " 10", "", "1\u{301}", "１０", "+5", "5.0"] {
            let response = sim.send(to: token, headers: ["apns-priority": value])
            #expect((response.reason != .badPriority) == (APNsPriority(headerValue: value) != nil), "\(value)")
        }
    }

    // MARK: - Payloads

    @Test func payloadsAreReadAsTheParserReadsThem() {
        var random = SeededRandomSource(seed: 14)
        var corpus = Self.fixedPayloads
        for _ in 0..<4000 { corpus.append(Self.randomPayload(&random)) }
        for text in corpus {
            var variants = [text]
            // Ill-formed neighbours: cut short, a byte changed, a byte dropped.
            let bytes = Array(text.utf8)
            if !bytes.isEmpty {
                let at = Int(random.next() % UInt64(bytes.count))
                variants.append(String(decoding: bytes[..<at], as: UTF8.self))
                var changed = bytes
                changed[at] = Array("{}[]\",:0-.eE \\tnx".utf8)[Int(random.next() % 17)]
                variants.append(String(decoding: changed, as: UTF8.self))
                var dropped = bytes
                dropped.remove(at: at)
                variants.append(String(decoding: dropped, as: UTF8.self))
            }
            for variant in variants {
                let body = Data(variant.utf8)
                for liveActivity in [false, true] {
                    let expected = Self.reference(body, liveActivity: liveActivity)
                    let read: Result<APSFields, PushPayload.Problem> = body.withUnsafeBytes { bytes in
                        var fields = APSFields()
                        do throws(PushPayload.Problem) {
                            try PushPayload.read(body, bytes: bytes, liveActivity: liveActivity, into: &fields)
                            return .success(fields)
                        } catch {
                            return .failure(error)
                        }
                    }
                    switch (read, expected) {
                    case (.success(let got), .success(let want)):
                        if liveActivity {
                            #expect(got == want, "\(variant)")
                        } else {
                            #expect(got.hasAlert == want.hasAlert, "\(variant)")
                        }
                    case (.failure(let got), .failure(let want)):
                        #expect(got == want, "\(variant)")
                    default:
                        Issue.record("\(variant): read \(read), parser \(expected)")
                    }
                }
            }
        }
    }

    /// What the parsed tree says.
    static func reference(_ body: Data, liveActivity: Bool) -> Result<APSFields, PushPayload.Problem> {
        guard let parsed = try? JSONValue(parsing: body, repeatedKeys: .lastWins) else { return .failure(.notJSON) }
        guard let object = parsed.objectValue else { return .failure(.notObject) }
        guard let aps = object["aps"] else { return .failure(.noAPS) }
        guard let members = aps.objectValue else { return .failure(.apsNotObject) }
        return .success(APSFields(members))
    }

    static let fixedPayloads = [
        #"{"aps":{"alert":{"title":"Hello","body":"World"}}}"#,
        #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{"eta":"12:40","step":2},"stale-date":1800000900,"relevance-score":50.5}}"#,
        #"{"aps":{"timestamp":-0,"event":"end","dismissal-date":0,"content-state":{}}}"#,
        #"{"aps":{"timestamp":1.8e9}}"#, #"{"aps":{"timestamp":1E2}}"#, #"{"aps":{"timestamp":123456789012345678}}"#,
        #"{"aps":{"timestamp":1234567890123456789}}"#, #"{"aps":{"timestamp":-1234567890123456789012.5}}"#,
        #"{"aps":{"timestamp":01}}"#, #"{"aps":{"timestamp":-}}"#, #"{"aps":{"timestamp":1.}}"#, #"{"aps":{"timestamp":.5}}"#,
        #"{"aps":{"event":"upd\u0061te"}}"#, #"{"aps":{"ev\u0065nt":"update"}}"#, #"{"aps":{"alert":"é"}}"#,
        "{\"aps\":{\"alert\":\"tab\tinside\"}}", #"{"aps":{"alert":null,"alert":false}}"#, #"{"aps":{"alert":1},"aps":{}}"#,
        #"{"aps":{},"aps":{"alert":1}}"#, #"{"aps":[],"aps":{"alert":1}}"#, #"{"aps":{"alert":1},"aps":[]}"#,
        #"{"aps":1}"#, #"{"aps":"x"}"#, #"{"APS":{}}"#, #"{}"#, #"[]"#, #"[{"aps":{}}]"#, #""aps""#, #"1"#, #"null"#,
        #" { "aps" : { "alert" : { } } } "#, "\t{\r\n\"aps\":{}\n}\r\n", #"{"aps":{}} x"#, #"{"aps":{}}}"#,
        #"{"aps":{"attributes":{"a":[1,2,{"b":[[]]}],"c":true,"d":null,"e":-1.25},"attributes-type":"T","input-push-token":1}}"#,
        #"{"aps":{"attributes":{"a":1,"a":2}}}"#, #"{"aps":{"content-state":{"x":1}},"x":[1e400]}"#,
        #"{"aps":{"content-state":[1,2,3]},"x":"\ud83d\ude00"}"#, #"{"aps":{"alert":"\ud800"}}"#,
        #"{"aps":{"relevance-score":1e-5}}"#, #"{"aps":{"relevance-score":-0.0}}"#, #"{"aps":{"alert":tru}}"#,
        #"{"aps":{"alert":nul}}"#, #"{"aps":{"alert":"x",}}"#, #"{"aps":{,"alert":"x"}}"#, #"{"aps":{"alert"::"x"}}"#,
        #"{"aps":{"alert":"x"}"#, #"{"aps":{"alert":"x\"}}"#,
        String(repeating: "[", count: 33) + String(repeating: "]", count: 33),
        "{\"aps\":{\"x\":" + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}}",
        "{\"aps\":{\"x\":" + String(repeating: "[", count: 70) + String(repeating: "]", count: 70) + "}}",
        "{\"aps\":{\"alert\":\"\u{1}\"}}", "{\"aps\":{\"alert\":\"\u{7F}\"}}", "", " ",
    ]

    /// A random payload, mostly plain, sometimes not.
    static func randomPayload(_ random: inout SeededRandomSource) -> String {
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        func space() -> String { random.next() % 4 == 0 ? pick([" ", "\n", "\t", "\r\n ", ""]) : "" }
        func value(_ depth: Int) -> String {
            switch random.next() % (depth > 3 ? 4 : 6) {
            case 0: return pick(["\"plain\"", "\"\"", "\"with space\"", "\"é\"", "\"\\n\"", "\"a\\\"b\"", "\"\\u00e9\"", "\"👋\""])
            case 1:
                return pick([
                    "0", "-0", "7", "-12", "1800000000", "1.5", "-0.25", "123456789012345678", "1234567890123456789",
                    "1e3", "2.5E-3", "99999999999999999999", "0.000001", "10.0",
                ])
            case 2: return pick(["true", "false", "null"])
            case 3: return pick(["{}", "[]", "[1]", "{\"k\":1}"])
            case 4:
                let count = Int(random.next() % 4)
                return "[" + (0..<count).map { _ in space() + value(depth + 1) + space() }.joined(separator: ",") + "]"
            default:
                let count = Int(random.next() % 4)
                return "{" + (0..<count).map { _ in
                    space() + "\"" + pick(["a", "b", "alert", "x-y", "é"]) + "\"" + space() + ":" + space() + value(depth + 1)
                }.joined(separator: ",") + "}"
            }
        }
        let fields = [
            "alert", "event", "timestamp", "stale-date", "dismissal-date", "content-state", "attributes-type", "attributes",
            "relevance-score", "input-push-token", "sound", "badge", "ale\\u0072t",
        ]
        let apsMembers = (0..<Int(random.next() % 6)).map { _ in
            "\"" + pick(fields) + "\"" + space() + ":" + space() + value(1)
        }
        var members = [space() + "\"aps\"" + space() + ":" + space() + "{" + apsMembers.joined(separator: ",") + "}"]
        if random.next() % 3 == 0 { members.append("\"custom\":" + value(1)) }
        if random.next() % 5 == 0 { members.append("\"aps\":" + value(1)) }
        if random.next() % 5 == 0 { members.shuffle(using: &random) }
        return space() + "{" + members.joined(separator: ",") + "}" + space()
    }
}

