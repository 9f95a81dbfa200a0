import Foundation
import IsletCore
@testable import Storage
import Testing

/// A push's settled event is written straight to JSON text; it must be the text the
/// same data printed as a `JSONValue` gives, member for member.
@Suite("Push events written as text")
struct PushEventTextTests {
    /// The data of a settled push as a dictionary: the definition the text keeps.
    static func definition(
        _ push: ClaimedPush, attempts: Int, apnsStatus: Int?, reason: String?
    ) -> JSONValue {
        var members: [String: JSONValue] = [
            "device_id": .string(push.deviceID), "event": .string(push.content.event.rawValue),
            "token_kind": .string(push.tokenKind.rawValue), "apns_id": .string(push.apnsID),
            "attempts": .integer(Int64(push.attempts + attempts)), "environment": .string(push.environment.rawValue),
        ]
        if let activityID = push.activityID { members["activity_id"] = .string(activityID) }
        if let apnsStatus { members["apns_status"] = .integer(Int64(apnsStatus)) }
        if let reason { members["reason"] = .string(reason) }
        return .object(members)
    }

    @Test(arguments: [PushStatus.sent, .failed, .dropped])
    func textIsTheDefinitionsText(status: PushStatus) throws {
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        for activityID in ["act-1", "quote \" and \u{1}é🛵", nil] as [String?] {
            for apnsStatus in [200, 410, nil] as [Int?] {
                for reason in ["Unregistered", "line\nbreak", nil] as [String?] {
                    for kind in [PushTokenKind.liveActivityUpdate, .pushToStart, .device] {
                        var push = claimedPush(kind: kind, activityID: activityID, environment: .production, createdAt: at)
                        push.attempts = 2
                        let event = try #require(NewEvent.pushSettled(
                            push, status: status, attempts: 3, apnsStatus: apnsStatus, reason: reason, at: at))
                        let expected = Self.definition(push, attempts: 3, apnsStatus: apnsStatus, reason: reason)
                        #expect(event.dataText == expected.jsonText)
                        #expect(event.data == expected)
                        #expect(event == NewEvent(
                            appID: push.appID, type: event.type, activityID: activityID, occurredAt: at, data: expected))
                    }
                }
            }
        }
    }

    /// A stored event prints with its data's text spliced in: the same text as the
    /// event printed from its parsed data.
    @Test func aStoredEventPrintsAsItsParsedSelf() throws {
        let at = Date(timeIntervalSince1970: 1_800_000_000.25)
        let push = claimedPush(activityID: "quote \" é🛵\n", createdAt: at)
        let event = try #require(NewEvent.pushSettled(push, status: .failed, attempts: 1, apnsStatus: 400, reason: "Bad\\", at: at))
        let stored = EventRecord(
            sequence: 42, appID: event.appID, type: event.type.rawValue, activityID: event.activityID, occurredAt: at,
            dataText: event.dataText)
        let parsed = EventRecord(
            sequence: 42, appID: event.appID, type: event.type.rawValue, activityID: event.activityID, occurredAt: at,
            data: event.data)
        #expect(stored.jsonText == parsed.json.jsonText)
        #expect(stored == parsed)
        #expect(stored.data == event.data)
        #expect(try JSONValue(parsing: Data(stored.jsonText.utf8)) == stored.json)
    }

    /// Data given as a value and data given as its text are one datum: equal, with
    /// equal hashes, and each gives the other's form back.
    @Test func dataAsValueAndAsTextAreOne() throws {
        let value: JSONValue = .object(["b": .integer(2), "a": .string("é\"\n"), "c": .array([.null, .bool(true)])])
        let text = EventData(text: value.jsonText)
        #expect(text == EventData(value))
        #expect(text.hashValue == EventData(value).hashValue)
        #expect(text.value == value)
        #expect(EventData(value).text == value.jsonText)
        #expect(EventData(text: "{\"a\":1}") != EventData(.object(["a": .integer(2)])))
        #expect(EventData(text: "not json").value == .null)
        var record = EventRecord(sequence: 1, appID: "app", type: "t", activityID: nil, occurredAt: Date(timeIntervalSince1970: 0), content: text)
        record.data = .integer(7)
        #expect(record.dataText == "7")
    }

    @Test func aRequeuedPushIsNoEvent() {
        let push = claimedPush(createdAt: Date(timeIntervalSince1970: 0))
        #expect(NewEvent.pushSettled(push, status: .queued, attempts: 1, apnsStatus: 503, reason: nil, at: Date()) == nil)
    }
}
