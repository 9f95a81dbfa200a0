import Foundation
import IsletCore
import Testing

/// A fixed "now" for every test: 2027-01-15 08:00:00 UTC.
private let now = Date(timeIntervalSince1970: 1_800_000_000)
private let bundleID = "com.example.delivery"

private let state: JSONValue = ["eta": "12:30", "stopsAway": 2, "progress": 0.65]
private let greeting = PushAlert(title: "Your order is on the way", body: "2 stops away")

private func start(
    attributesType: String? = "DeliveryAttributes", attributes: JSONValue? = ["orderId": "A-1234"],
    contentState: JSONValue? = state, alert: PushAlert? = greeting
) -> LiveActivityPush {
    LiveActivityPush(
        event: .start, contentState: contentState, attributesType: attributesType, attributes: attributes, alert: alert)
}

/// The error `build` throws, or `nil` when it builds.
private func refusal(_ build: () throws(PayloadError) -> BuiltPush) -> PayloadError? {
    do {
        _ = try build()
        return nil
    } catch {
        return error
    }
}

private func refusal(_ push: LiveActivityPush, lastTimestamp: Int64? = nil) -> PayloadError? {
    refusal { () throws(PayloadError) in try push.build(bundleID: bundleID, now: now, lastTimestamp: lastTimestamp) }
}

private func refusal(_ push: AlertPush) -> PayloadError? {
    refusal { () throws(PayloadError) in try push.build(bundleID: bundleID, now: now) }
}

/// The payload read back as a JSON value.
private func parsed(_ built: BuiltPush) throws -> JSONValue {
    try JSONValue(parsing: built.payload)
}

@Suite("Payload builders: refusals")
struct PayloadRefusalTests {
    @Test func startWithoutAttributesTypeIsRefused() {
        let missing = refusal(start(attributesType: nil))
        #expect(missing?.code == .missing)
        #expect(missing?.field == "aps.attributes-type")
        let empty = refusal(start(attributesType: ""))
        #expect(empty?.code == .empty)
        #expect(empty?.field == "aps.attributes-type")
    }

    @Test func startWithoutNonEmptyAttributesIsRefused() {
        let missing = refusal(start(attributes: nil))
        #expect(missing?.code == .missing)
        #expect(missing?.field == "aps.attributes")
        let empty = refusal(start(attributes: [:]))
        #expect(empty?.code == .empty)
        #expect(empty?.field == "aps.attributes")
        let array = refusal(start(attributes: ["orderId"]))
        #expect(array?.code == .notAnObject)
        #expect(array?.field == "aps.attributes")
    }

    @Test func startWithoutAlertTitleAndBodyIsRefused() {
        let missing = refusal(start(alert: nil))
        #expect(missing?.code == .missing)
        #expect(missing?.field == "aps.alert")
        let noTitle = refusal(start(alert: PushAlert(title: "", body: "2 stops away")))
        #expect(noTitle?.code == .empty)
        #expect(noTitle?.field == "aps.alert.title")
        let noBody = refusal(start(alert: PushAlert(title: "On the way", body: "")))
        #expect(noBody?.code == .empty)
        #expect(noBody?.field == "aps.alert.body")
        let noKey = refusal(start(alert: PushAlert(title: .localized(key: ""), body: "2 stops away")))
        #expect(noKey?.field == "aps.alert.title")
    }

    @Test func attributesAreRefusedOutsideAStart() {
        var update = LiveActivityPush.update(contentState: state)
        update.attributesType = "DeliveryAttributes"
        #expect(refusal(update)?.field == "aps.attributes-type")
        #expect(refusal(update)?.code == .notAllowed)
        var end = LiveActivityPush.end()
        end.attributes = ["orderId": "A-1234"]
        #expect(refusal(end)?.field == "aps.attributes")
        #expect(refusal(end)?.code == .notAllowed)
    }

    @Test func dismissalDateIsRefusedExceptOnAnEnd() {
        let later = now.addingTimeInterval(600)
        var startPush = start()
        startPush.dismissalDate = later
        var update = LiveActivityPush.update(contentState: state)
        update.dismissalDate = later
        for push in [startPush, update] {
            let error = refusal(push)
            #expect(error?.code == .notAllowed, "\(push.event)")
            #expect(error?.field == "aps.dismissal-date", "\(push.event)")
        }
        #expect(refusal(.end(dismissalDate: later)) == nil)
    }

    @Test func staleDateInThePastIsRefused() {
        let error = refusal(.update(contentState: state, staleDate: now.addingTimeInterval(-1)))
        #expect(error?.code == .inThePast)
        #expect(error?.field == "aps.stale-date")
        #expect(refusal(.update(contentState: state, staleDate: now)) == nil)
    }

    @Test func datesThatLookLikeMillisecondsAreRefused() {
        let milliseconds = Date(timeIntervalSince1970: 1e11)
        let justBelow = Date(timeIntervalSince1970: 1e11 - 1)

        let stale = refusal(.update(contentState: state, staleDate: milliseconds))
        #expect(stale?.code == .looksLikeMilliseconds)
        #expect(stale?.field == "aps.stale-date")
        #expect(refusal(.update(contentState: state, staleDate: justBelow)) == nil)

        let dismissal = refusal(.end(dismissalDate: milliseconds))
        #expect(dismissal?.code == .looksLikeMilliseconds)
        #expect(dismissal?.field == "aps.dismissal-date")
        #expect(refusal(.end(dismissalDate: justBelow)) == nil)

        var explicit = LiveActivityPush.update(contentState: state)
        explicit.timestamp = 1_800_000_000_000
        let timestamp = refusal(explicit)
        #expect(timestamp?.code == .looksLikeMilliseconds)
        #expect(timestamp?.field == "aps.timestamp")
        explicit.timestamp = 99_999_999_999
        #expect(refusal(explicit) == nil)

        let last = refusal(.update(contentState: state), lastTimestamp: 1_800_000_000_000)
        #expect(last?.code == .looksLikeMilliseconds)
        #expect(last?.field == "aps.timestamp")

        var expiring = LiveActivityPush.update(contentState: state)
        expiring.expiration = .at(milliseconds)
        let expiration = refusal(expiring)
        #expect(expiration?.code == .looksLikeMilliseconds)
        #expect(expiration?.field == "apns-expiration")
    }

    @Test func datesBefore1970AreRefused() {
        let error = refusal(.end(dismissalDate: Date(timeIntervalSince1970: -1)))
        #expect(error?.code == .beforeEpoch)
        #expect(error?.field == "aps.dismissal-date")
        var explicit = LiveActivityPush.update(contentState: state)
        explicit.timestamp = -5
        #expect(refusal(explicit)?.code == .beforeEpoch)
    }

    @Test func contentStateMustBeANonEmptyObjectWhereRequired() {
        for event in [LiveActivityEvent.start, .update] {
            var push = event == .start ? start() : .update(contentState: state)
            push.contentState = nil
            #expect(refusal(push)?.code == .missing, "\(event)")
            #expect(refusal(push)?.field == "aps.content-state", "\(event)")
        }
        for bad: JSONValue in [[:], ["eta"], "12:30", 3, nil] {
            for event in LiveActivityEvent.allCases {
                var push = event == .start ? start() : LiveActivityPush(event: event)
                push.contentState = bad
                let error = refusal(push)
                #expect(error?.code == (bad == [:] ? .empty : .notAnObject), "\(event) \(bad.jsonText)")
                #expect(error?.field == "aps.content-state", "\(event) \(bad.jsonText)")
            }
        }
        #expect(refusal(.end()) == nil)
    }

    @Test func nonFiniteNumbersInsideContentStateAreRefusedByPath() {
        let error = refusal(.update(contentState: ["stops": [1, .double(.nan)]]))
        #expect(error?.code == .notFinite)
        #expect(error?.field == "aps.content-state.stops[1]")
    }

    @Test func nonFiniteRelevanceScoreIsRefused() {
        for score in [Double.nan, .infinity, -.infinity] {
            let error = refusal(.update(contentState: state, relevanceScore: score))
            #expect(error?.code == .notFinite, "\(score)")
            #expect(error?.field == "aps.relevance-score", "\(score)")
        }
        #expect(refusal(.update(contentState: state, relevanceScore: 0.5)) == nil)
    }

    @Test func liveActivityPriorityIsFiveOrTen() throws {
        for bad in [0, 1, 7, 11] {
            var push = LiveActivityPush.update(contentState: state)
            push.priority = bad
            let error = refusal(push)
            #expect(error?.code == .invalidPriority, "\(bad)")
            #expect(error?.field == "apns-priority", "\(bad)")
        }
        for good in [5, 10] {
            var push = LiveActivityPush.update(contentState: state)
            push.priority = good
            #expect(try push.build(bundleID: bundleID, now: now).priority.rawValue == good)
        }
    }

    @Test func alertPriorityIsOneFiveOrTen() throws {
        for bad in [0, 2, 9] {
            let error = refusal(AlertPush(title: "Hi", priority: bad))
            #expect(error?.code == .invalidPriority, "\(bad)")
            #expect(error?.field == "apns-priority", "\(bad)")
        }
        for good in [1, 5, 10] {
            #expect(try AlertPush(title: "Hi", priority: good).build(bundleID: bundleID, now: now).priority.rawValue == good)
        }
    }

    @Test func collapseIDOver64BytesIsRefused() throws {
        var push = LiveActivityPush.update(contentState: state)
        push.collapseID = String(repeating: "é", count: 32)  // 64 bytes
        #expect(try push.build(bundleID: bundleID, now: now).collapseID == push.collapseID)
        push.collapseID = String(repeating: "é", count: 32) + "x"  // 65 bytes, 33 characters
        let error = refusal(push)
        #expect(error?.code == .tooLong)
        #expect(error?.field == "apns-collapse-id")
        #expect(error?.message.contains("65") == true)
        let alert = refusal(AlertPush(title: "Hi", collapseID: String(repeating: "a", count: 65)))
        #expect(alert?.field == "apns-collapse-id")
        #expect(refusal(AlertPush(title: "Hi", collapseID: ""))?.code == .empty)
    }

    @Test func explicitTimestampNotNewerThanTheLastIsRefused() {
        for explicit: Int64 in [1_800_000_100, 1_800_000_099] {
            var push = LiveActivityPush.update(contentState: state)
            push.timestamp = explicit
            let error = refusal(push, lastTimestamp: 1_800_000_100)
            #expect(error?.code == .notNewer, "\(explicit)")
            #expect(error?.field == "aps.timestamp", "\(explicit)")
            #expect(error?.message.contains("1800000100") == true, "\(explicit)")
        }
    }

    @Test func payloadOverTheLimitIsRefusedWithSizeAndLimit() throws {
        let exact = try paddedUpdate(toBytes: 4096)
        #expect(try exact.build(bundleID: bundleID, now: now).payload.count == 4096)
        let over = try paddedUpdate(toBytes: 4097)
        let error = refusal(over)
        #expect(error?.code == .tooLarge)
        // The field that made it large, not the payload as a whole.
        #expect(error?.field == "aps.content-state")
        #expect(error?.message.contains("the payload is 4,097 bytes") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("APNs takes at most 4,096 for a device's own update token") == true)
        #expect(error?.message.contains("largest part") == true)

        let bigAlert = AlertPush(title: "Hi", customData: ["blob": .string(String(repeating: "x", count: 4096))])
        #expect(refusal(bigAlert)?.code == .tooLarge)
        #expect(refusal(bigAlert)?.field == "blob")
        let longTitle = AlertPush(title: .literal(String(repeating: "x", count: 4096)))
        #expect(refusal(longTitle)?.field == "aps.alert")
    }

    @Test func aBroadcastTakesUpTo5120BytesAndAPushGoingBothWaysIsCheckedAgainstTheSmaller() throws {
        let broadcast = try paddedUpdate(toBytes: 5120)
        let built = try broadcast.build(bundleID: bundleID, now: now, limit: .broadcast)
        #expect(built.payload.count == 5120)
        // To a token as well, it is over that way's limit, named with its field.
        #expect(refusal(broadcast)?.code == .tooLarge)
        var tokenError: PayloadError?
        do throws(PayloadError) { try broadcast.check(built, fitsIn: .updateToken) } catch { tokenError = error }
        #expect(tokenError?.code == .tooLarge)
        #expect(tokenError?.field == "aps.content-state")
        #expect(tokenError?.message.hasPrefix("the payload is 5,120 bytes; APNs takes at most 4,096 for a device's own update token") == true, "\(tokenError?.message ?? "")")
        #expect(throws: Never.self) { try broadcast.check(built, fitsIn: .broadcast) }

        let over = try paddedUpdate(toBytes: 5121)
        let overError = refusal { () throws(PayloadError) in try over.build(bundleID: bundleID, now: now, limit: .broadcast) }
        #expect(overError?.field == "aps.content-state")
        #expect(overError?.message.hasPrefix("the broadcast payload is 5,121 bytes; APNs takes at most 5,120 on a channel") == true, "\(overError?.message ?? "")")

        // A start goes to a push-to-start token, and says so.
        let start = LiveActivityPush.start(
            attributesType: "A", attributes: ["pad": .string(String(repeating: "x", count: 4100))], contentState: state,
            alert: PushAlert(title: "T", body: "B"))
        #expect(refusal(start)?.field == "aps.attributes")
        #expect(refusal(start)?.message.contains("4,096 for a push-to-start token") == true)
        #expect(PayloadLimit.fcmDataMessage.refusal(size: 1_234_567) == "the data message is 1,234,567 bytes; FCM takes at most 4,096 in a data message")
        #expect(PayloadLimit.broadcast.refusal(size: 999).hasPrefix("the broadcast payload is 999 bytes;"))
    }

    /// An update whose payload is `bytes` long, padded through its content state.
    private func paddedUpdate(toBytes bytes: Int) throws -> LiveActivityPush {
        let base = try LiveActivityPush.update(contentState: ["pad": ""]).build(bundleID: bundleID, now: now)
        let padding = String(repeating: "x", count: bytes - base.payload.count)
        return .update(contentState: ["pad": .string(padding)])
    }

    @Test func alertWithoutTitleOrBodyIsRefused() {
        let nothing = refusal(AlertPush(subtitle: "Only a subtitle"))
        #expect(nothing?.code == .missing)
        #expect(nothing?.field == "aps.alert")
        let emptyBody = refusal(AlertPush(title: "Hi", body: ""))
        #expect(emptyBody?.code == .empty)
        #expect(emptyBody?.field == "aps.alert.body")
        #expect(refusal(AlertPush(title: "Hi")) == nil)
        #expect(refusal(AlertPush(body: "Hi")) == nil)
    }

    @Test func alertCustomDataMayNotCarryAps() {
        let error = refusal(AlertPush(title: "Hi", customData: ["aps": ["badge": 1], "orderId": "A-1234"]))
        #expect(error?.code == .notAllowed)
        #expect(error?.field == "aps")
        let nan = refusal(AlertPush(title: "Hi", customData: ["order": ["total": .double(.infinity)]]))
        #expect(nan?.code == .notFinite)
        #expect(nan?.field == "order.total")
    }

    @Test func negativeBadgeIsRefused() {
        let error = refusal(AlertPush(title: "Hi", badge: -1))
        #expect(error?.code == .outOfRange)
        #expect(error?.field == "aps.badge")
    }

    @Test func expirationInThePastIsRefused() throws {
        var push = LiveActivityPush.update(contentState: state)
        push.expiration = .at(now.addingTimeInterval(-60))
        #expect(refusal(push)?.code == .inThePast)
        #expect(refusal(push)?.field == "apns-expiration")
        push.expiration = .onceOnly
        #expect(try push.build(bundleID: bundleID, now: now).expiration == 0)
        push.expiration = .at(now.addingTimeInterval(3600.9))
        #expect(try push.build(bundleID: bundleID, now: now).expiration == 1_800_003_600)
    }

    @Test func bundleIDMustBeNonEmptyWithoutWhitespace() {
        for bad in [
            "", "com.example app", " com.example.app", "com.example.app\n", "com.example.app.push-type.liveactivity",
            "com.example\tapp", "com.example\r\napp", "com.example\u{0B}app", "com.example\u{0C}app",
            "com.exämple\u{A0}app", "com.example\u{2028}app", "com.example\u{3000}app", "café.push-type.alert",
            ".push-type.", "a.push-type.b",
        ] {
            let live = refusal { () throws(PayloadError) in
                try LiveActivityPush.update(contentState: state).build(bundleID: bad, now: now)
            }
            #expect(live?.code == .invalidBundleID, "\(bad)")
            #expect(live?.field == "apns-topic", "\(bad)")
            let alert = refusal { () throws(PayloadError) in try AlertPush(title: "Hi").build(bundleID: bad, now: now) }
            #expect(alert?.code == .invalidBundleID, "\(bad)")
        }
    }

    @Test func bundleIDsWithoutWhitespaceOrSuffixAreTakenWhateverTheirScript() throws {
        for good in [
            "a", "com.example.app", "com.exämple.app", "com.example.push-type", "com.example.push_type.x", "com.example.\u{1F}app",
            "日本.アプリ", "com.example.app.push-typ.e", ".push-type", "push-type.",
        ] {
            #expect(try LiveActivityPush.update(contentState: state).build(bundleID: good, now: now).topic
                == good + ".push-type.liveactivity", "\(good)")
        }
    }

    @Test func descriptionNamesTheField() {
        let error = refusal(.update(contentState: state, staleDate: now.addingTimeInterval(-10)))
        #expect(error?.description.hasPrefix("aps.stale-date: ") == true)
        #expect(error?.description.contains("1799999990") == true)
    }
}

@Suite("Payload builders: what they build")
struct PayloadBuildTests {
    @Test func start() throws {
        let push = LiveActivityPush.start(
            attributesType: "DeliveryAttributes", attributes: ["orderId": "A-1234"], contentState: state,
            alert: PushAlert(title: "Your order is on the way", body: "2 stops away", sound: "default"),
            staleDate: now.addingTimeInterval(3600), relevanceScore: 0.75)
        let built = try push.build(bundleID: bundleID, now: now)
        #expect(try parsed(built) == [
            "aps": [
                "timestamp": 1_800_000_000,
                "event": "start",
                "content-state": ["eta": "12:30", "stopsAway": 2, "progress": 0.65],
                "attributes-type": "DeliveryAttributes",
                "attributes": ["orderId": "A-1234"],
                "alert": ["title": "Your order is on the way", "body": "2 stops away", "sound": "default"],
                "input-push-token": 1,
                "stale-date": 1_800_003_600,
                "relevance-score": 0.75,
            ],
        ])
        #expect(built.event == .start)
        #expect(built.timestamp == 1_800_000_000)
        #expect(built.expiration == nil)
        #expect(built.collapseID == nil)
    }

    @Test func update() throws {
        let built = try LiveActivityPush.update(contentState: state, staleDate: now.addingTimeInterval(900.7))
            .build(bundleID: bundleID, now: now.addingTimeInterval(0.9), lastTimestamp: 1_799_999_000)
        #expect(try parsed(built) == [
            "aps": [
                "timestamp": 1_800_000_000,
                "event": "update",
                "content-state": ["eta": "12:30", "stopsAway": 2, "progress": 0.65],
                "stale-date": 1_800_000_900,
            ],
        ])
    }

    @Test func updateWithAlertAndLocalizedText() throws {
        let alert = PushAlert(
            title: .localized(key: "ORDER_NEAR", arguments: ["A-1234"]), body: .localized(key: "STOPS_AWAY"))
        let built = try LiveActivityPush.update(contentState: state, alert: alert).build(bundleID: bundleID, now: now)
        #expect(try parsed(built)["aps"]?["alert"] == [
            "title": ["loc-key": "ORDER_NEAR", "loc-args": ["A-1234"]],
            "body": ["loc-key": "STOPS_AWAY"],
        ])
    }

    @Test func endWithoutContentStateOrDismissalDate() throws {
        let built = try LiveActivityPush.end().build(bundleID: bundleID, now: now, lastTimestamp: 1_800_000_000)
        #expect(try parsed(built) == ["aps": ["timestamp": 1_800_000_001, "event": "end"]])
        #expect(built.timestamp == 1_800_000_001)
    }

    @Test func endWithContentStateAndDismissalDate() throws {
        let final: JSONValue = ["eta": "delivered", "stopsAway": 0, "progress": 1.0]
        let built = try LiveActivityPush.end(contentState: final, dismissalDate: now.addingTimeInterval(300))
            .build(bundleID: bundleID, now: now)
        #expect(try parsed(built) == [
            "aps": [
                "timestamp": 1_800_000_000,
                "event": "end",
                "content-state": ["eta": "delivered", "stopsAway": 0, "progress": 1.0],
                "dismissal-date": 1_800_000_300,
            ],
        ])
    }

    @Test func endMayDismissAtOnceWithAPastDate() throws {
        let built = try LiveActivityPush.end(dismissalDate: now.addingTimeInterval(-60)).build(bundleID: bundleID, now: now)
        #expect(try parsed(built)["aps"]?["dismissal-date"] == 1_799_999_940)
    }

    @Test func alert() throws {
        let push = AlertPush(
            title: "Delivered", subtitle: "Order A-1234", body: "Enjoy your meal", sound: "default", badge: 3,
            customData: ["orderId": "A-1234", "deepLink": ["screen": "order"]], priority: 5, expiration: .onceOnly,
            collapseID: "order-A-1234")
        let built = try push.build(bundleID: bundleID, now: now)
        #expect(try parsed(built) == [
            "aps": [
                "alert": ["title": "Delivered", "subtitle": "Order A-1234", "body": "Enjoy your meal"],
                "sound": "default",
                "badge": 3,
            ],
            "orderId": "A-1234",
            "deepLink": ["screen": "order"],
        ])
        #expect(built.timestamp == nil)
        #expect(built.event == nil)
        #expect(built.priority == .powerConsidered)
        #expect(built.expiration == 0)
        #expect(built.collapseID == "order-A-1234")
    }

    @Test func localizedAlert() throws {
        let push = AlertPush(
            title: .localized(key: "DELIVERED_TITLE"), subtitle: .localized(key: "ORDER", arguments: ["A-1234"]),
            body: .localized(key: "DELIVERED_BODY", arguments: ["Sam", "12:30"]))
        #expect(try parsed(push.build(bundleID: bundleID, now: now)) == [
            "aps": [
                "alert": [
                    "title-loc-key": "DELIVERED_TITLE",
                    "subtitle-loc-key": "ORDER", "subtitle-loc-args": ["A-1234"],
                    "loc-key": "DELIVERED_BODY", "loc-args": ["Sam", "12:30"],
                ],
            ],
        ])
    }

    @Test func payloadIsPlainJSONAnyParserReads() throws {
        let built = try LiveActivityPush.update(contentState: state, relevanceScore: 1e-7).build(bundleID: bundleID, now: now)
        let object = try #require(try JSONSerialization.jsonObject(with: built.payload) as? [String: Any])
        let aps = try #require(object["aps"] as? [String: Any])
        #expect(aps["event"] as? String == "update")
        #expect(aps["relevance-score"] as? Double == 1e-7)
    }
}

@Suite("Payload builders: timestamps, headers and token kinds")
struct PayloadEnvelopeTests {
    @Test func timestampIsNowWithoutAPreviousOne() throws {
        let built = try LiveActivityPush.update(contentState: state).build(bundleID: bundleID, now: now.addingTimeInterval(0.99))
        #expect(built.timestamp == 1_800_000_000)
    }

    @Test func timestampIsTheLargerOfNowAndLastPlusOne() throws {
        let push = LiveActivityPush.update(contentState: state)
        #expect(try push.build(bundleID: bundleID, now: now, lastTimestamp: 1_799_999_000).timestamp == 1_800_000_000)
        #expect(try push.build(bundleID: bundleID, now: now, lastTimestamp: 1_799_999_999).timestamp == 1_800_000_000)
        #expect(try push.build(bundleID: bundleID, now: now, lastTimestamp: 1_800_000_000).timestamp == 1_800_000_001)
        #expect(try push.build(bundleID: bundleID, now: now, lastTimestamp: 1_800_000_500).timestamp == 1_800_000_501)
        // Two pushes in the same second, each fed the last one's timestamp.
        let first = try push.build(bundleID: bundleID, now: now, lastTimestamp: nil)
        let second = try push.build(bundleID: bundleID, now: now, lastTimestamp: first.timestamp)
        #expect(second.timestamp == 1_800_000_001)
        #expect(try parsed(second)["aps"]?["timestamp"] == 1_800_000_001)
    }

    @Test func explicitTimestampNewerThanTheLastIsUsedAsGiven() throws {
        var push = LiveActivityPush.update(contentState: state)
        push.timestamp = 1_700_000_000
        let built = try push.build(bundleID: bundleID, now: now, lastTimestamp: 1_699_999_999)
        #expect(built.timestamp == 1_700_000_000)
        #expect(try parsed(built)["aps"]?["timestamp"] == 1_700_000_000)
    }

    @Test func liveActivityHeaders() throws {
        var push = LiveActivityPush.update(contentState: state)
        push.expiration = .at(now.addingTimeInterval(60))
        push.collapseID = "order-A-1234"
        let built = try push.build(bundleID: bundleID, now: now)
        #expect(built.pushType == .liveactivity)
        #expect(built.topic == "com.example.delivery.push-type.liveactivity")
        #expect(built.headerFields.map { "\($0.name): \($0.value)" } == [
            "apns-push-type: liveactivity",
            "apns-topic: com.example.delivery.push-type.liveactivity",
            "apns-priority: 5",
            "apns-expiration: 1800000060",
            "apns-collapse-id: order-A-1234",
        ])
    }

    @Test func alertHeaders() throws {
        let built = try AlertPush(title: "Hi").build(bundleID: bundleID, now: now)
        #expect(built.pushType == .alert)
        #expect(built.topic == "com.example.delivery")
        #expect(built.headerFields.map { "\($0.name): \($0.value)" } == [
            "apns-push-type: alert",
            "apns-topic: com.example.delivery",
            "apns-priority: 10",
        ])
    }

    @Test func defaultPriorities() throws {
        let build = { (push: LiveActivityPush) throws in try push.build(bundleID: bundleID, now: now).priority }
        #expect(try build(start()) == .immediate)
        #expect(try build(.update(contentState: state)) == .powerConsidered)
        #expect(try build(.update(contentState: state, alert: greeting)) == .immediate)
        #expect(try build(.end()) == .immediate)
        #expect(try AlertPush(title: "Hi").build(bundleID: bundleID, now: now).priority == .immediate)
    }

    @Test func eachPushGoesOnlyToItsKindOfToken() throws {
        let expected: [(BuiltPush, PushTokenKind)] = [
            (try start().build(bundleID: bundleID, now: now), .pushToStart),
            (try LiveActivityPush.update(contentState: state).build(bundleID: bundleID, now: now), .liveActivityUpdate),
            (try LiveActivityPush.end().build(bundleID: bundleID, now: now), .liveActivityUpdate),
            (try AlertPush(title: "Hi").build(bundleID: bundleID, now: now), .device),
        ]
        for (built, kind) in expected {
            #expect(built.tokenKind == kind)
            for other in PushTokenKind.allCases {
                #expect(built.accepts(other) == (other == kind), "\(built.pushType) to \(other)")
                // The builder's answer agrees with the token kind's own rule.
                if built.accepts(other) { #expect(other.accepts(built.pushType)) }
            }
        }
    }

    @Test func aLiveActivityPushNeverReachesADeviceTokenNorAnAlertALiveActivityToken() throws {
        for push in [start(), .update(contentState: state), .end()] {
            #expect(!(try push.build(bundleID: bundleID, now: now).accepts(.device)), "\(push.event)")
        }
        let alert = try AlertPush(title: "Hi").build(bundleID: bundleID, now: now)
        #expect(!alert.accepts(.pushToStart))
        #expect(!alert.accepts(.liveActivityUpdate))
    }
}

@Suite("Payload builders: a start subscribing to a broadcast channel")
struct ChannelStartPayloadTests {
    @Test func aStartOnAChannelCarriesItsIdInsteadOfAskingForAToken() throws {
        var push = start()
        push.inputPushChannel = "dHdvIHBob25lcw=="
        let aps = try parsed(try push.build(bundleID: bundleID, now: now, lastTimestamp: nil))["aps"]
        #expect(aps?["input-push-channel"] == "dHdvIHBob25lcw==")
        #expect(aps?["input-push-token"] == nil)
        let plain = try parsed(try start().build(bundleID: bundleID, now: now, lastTimestamp: nil))["aps"]
        #expect(plain?["input-push-token"] == 1)
        #expect(plain?["input-push-channel"] == nil)
    }

    @Test func onlyAStartSubscribesAndNeverToAnEmptyId() {
        var empty = start()
        empty.inputPushChannel = ""
        #expect(refusal(empty)?.field == "aps.input-push-channel")
        var update = LiveActivityPush.update(contentState: state)
        update.inputPushChannel = "dHdv"
        #expect(refusal(update)?.field == "aps.input-push-channel")
    }
}

@Suite("Broadcast choice: when auto uses a channel")
struct BroadcastChoiceTests {
    @Test func aChannelOnlyAboveTheThreshold() {
        let choice = BroadcastChoice(threshold: 1_000)
        #expect(choice.choose(capable: 1_000, total: 1_000, newChannelsIn: [.production: 0]).delivery == .tokens)
        let above = choice.choose(capable: 1_001, total: 1_200, newChannelsIn: [.production: 0])
        #expect(above.delivery == .channel)
        #expect(above.reason.contains("1001 device(s) can take a channel"))
        let below = choice.choose(capable: 900, total: 1_200, newChannelsIn: [:])
        #expect(below.reason.contains("900 device(s) (of 1200)"))
    }

    @Test func nearAPNsLimitTokensInsteadOfAnotherChannel() {
        let choice = BroadcastChoice(threshold: 0)
        #expect(BroadcastChoice.guardCount == 9_500)
        #expect(choice.choose(capable: 5, total: 5, newChannelsIn: [.sandbox: 9_499]).delivery == .channel)
        let near = choice.choose(capable: 5, total: 5, newChannelsIn: [.sandbox: 9_500])
        #expect(near.delivery == .tokens)
        #expect(near.reason.contains("9500 channels in sandbox"))
        // Only an environment that needs a new channel counts.
        #expect(choice.choose(capable: 5, total: 5, newChannelsIn: [:]).delivery == .channel)
    }

    @Test(arguments: [
        (nil, true), ("18", true), ("18.2.1", true), ("26.0", true), ("17.7", false), ("16", false), ("beta", true),
    ] as [(String?, Bool)])
    func iOS18OrLaterOrUnknownTakesAChannel(version: String?, takes: Bool) {
        #expect(BroadcastChoice.takesChannels(osVersion: version) == takes)
    }
}
