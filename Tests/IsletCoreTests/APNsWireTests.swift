import Foundation
import IsletCore
import Testing

@Suite("APNs reasons")
struct APNsReasonTests {
    @Test func everyKnownReasonRoundTripsThroughItsSpelling() {
        #expect(APNsReason.allKnown.count == 40)
        #expect(Set(APNsReason.allKnown.map(\.rawValue)).count == 40)
        for reason in APNsReason.allKnown {
            #expect(APNsReason(rawValue: reason.rawValue) == reason)
            #expect(reason.isKnown)
            #expect(reason.status != nil)
        }
    }

    @Test func statusesMatchApplesTable() {
        let expected: [Int: [String]] = [
            400: ["BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
                  "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
                  "MissingTopic", "PayloadEmpty", "TopicDisallowed", "FeatureNotEnabled", "MissingChannelId",
                  "BadChannelId", "ChannelNotRegistered", "CannotCreateChannelConfig", "MissingPushType",
                  "BadRequestParams", "BadRequestPayload"],
            403: ["BadCertificate", "BadCertificateEnvironment", "ExpiredProviderToken", "Forbidden",
                  "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken", "BadEnvironmentKeyIdInToken"],
            404: ["BadPath"],
            405: ["MethodNotAllowed"],
            410: ["ExpiredToken", "Unregistered"],
            413: ["PayloadTooLarge"],
            429: ["TooManyProviderTokenUpdates", "TooManyRequests"],
            500: ["InternalServerError"],
            503: ["ServiceUnavailable", "Shutdown"],
        ]
        var seen = 0
        for (status, names) in expected {
            for name in names {
                #expect(APNsReason(rawValue: name).status == status, "\(name)")
                #expect(APNsReason(rawValue: name).isKnown, "\(name)")
                seen += 1
            }
        }
        #expect(seen == APNsReason.allKnown.count)
    }

    @Test func unknownReasonsAreKeptVerbatim() {
        let reason = APNsReason(rawValue: "SomethingNew")
        #expect(reason == .unknown("SomethingNew"))
        #expect(reason.rawValue == "SomethingNew")
        #expect(reason.status == nil)
        #expect(!reason.isKnown)
        // Spelling is exact, as APNs sends it.
        #expect(APNsReason(rawValue: "baddevicetoken") == .unknown("baddevicetoken"))
    }

    @Test func decodesFromAnAPNsBody() throws {
        struct Body: Decodable { let reason: APNsReason; let timestamp: Int64? }
        let gone = try JSONDecoder().decode(Body.self, from: Data(#"{"reason":"Unregistered","timestamp":1800000000000}"#.utf8))
        #expect(gone.reason == .unregistered)
        #expect(gone.timestamp == 1_800_000_000_000)
        let new = try JSONDecoder().decode(Body.self, from: Data(#"{"reason":"FeatureNotEnabled"}"#.utf8))
        #expect(new.reason == .unknown("FeatureNotEnabled"))
        let encoded = try JSONEncoder().encode([APNsReason.badTopic, .unknown("X")])
        #expect(try JSONSerialization.jsonObject(with: encoded) as? [String] == ["BadTopic", "X"])
    }
}

@Suite("APNs push types, environments and priorities")
struct APNsHeaderValueTests {
    @Test func pushTypesAreSpelledAsAPNsSpellsThem() {
        #expect(APNsPushType.allCases.map(\.rawValue) == [
            "alert", "background", "liveactivity", "voip", "complication", "fileprovider", "mdm", "location",
            "pushtotalk", "widgets", "controls",
        ])
        #expect(APNsPushType(rawValue: "LiveActivity") == nil)
    }

    @Test func liveActivityTopicsNeedTheirSuffix() {
        #expect(APNsPushType.liveactivity.fits(topic: "com.example.app.push-type.liveactivity"))
        #expect(!APNsPushType.liveactivity.fits(topic: "com.example.app"))
        #expect(!APNsPushType.liveactivity.fits(topic: ".push-type.liveactivity"))
        #expect(APNsPushType.alert.fits(topic: "com.example.app"))
        #expect(!APNsPushType.alert.fits(topic: "com.example.app.push-type.liveactivity"))
        #expect(APNsPushType.voip.fits(topic: "com.example.app.voip"))
        #expect(APNsPushType.pushtotalk.fits(topic: "com.example.app.voip-ptt"))
        #expect(!APNsPushType.voip.fits(topic: "com.example.app.voip-ptt"))
        #expect(APNsPushType.mdm.fits(topic: "com.apple.mgmt.External.1234"))
    }

    @Test func payloadLimits() {
        #expect(APNsPushType.liveactivity.maximumPayloadBytes == 4096)
        #expect(APNsPushType.alert.maximumPayloadBytes == 4096)
        #expect(APNsPushType.voip.maximumPayloadBytes == 5120)
    }

    @Test func environments() {
        #expect(APNsEnvironment.sandbox.host == "api.sandbox.push.apple.com")
        #expect(APNsEnvironment.production.host == "api.push.apple.com")
        #expect(APNsEnvironment.sandbox.other == .production)
        #expect(APNsEnvironment(rawValue: "development") == nil)
    }

    @Test func prioritiesAreOnlyOneFiveAndTen() throws {
        #expect(APNsPriority(headerValue: "10") == .immediate)
        #expect(APNsPriority(headerValue: "5") == .powerConsidered)
        #expect(APNsPriority(headerValue: "1") == .lowest)
        for bad in ["0", "2", "11", "-1", "010", " 10", "10 ", "high", ""] {
            #expect(APNsPriority(headerValue: bad) == nil, "\(bad)")
        }
        #expect(APNsPriority(rawValue: 7) == nil)
        #expect(try JSONDecoder().decode([APNsPriority].self, from: Data("[5,10]".utf8)) == [.powerConsidered, .immediate])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([APNsPriority].self, from: Data("[3]".utf8)) }
    }

    @Test func headerNamesAreLowercase() {
        for name in [APNsHeaderName.authorization, APNsHeaderName.pushType, APNsHeaderName.id, APNsHeaderName.expiration,
                     APNsHeaderName.priority, APNsHeaderName.topic, APNsHeaderName.collapseID, APNsHeaderName.uniqueID] {
            #expect(name == name.lowercased())
        }
        #expect(APNsPath.device("ab") == "/3/device/ab")
    }
}

@Suite("apns-id")
struct APNsMessageIDTests {
    @Test func canonicalMeansLowercase8_4_4_4_12() {
        #expect(APNsMessageID.isCanonical("123e4567-e89b-12d3-a456-4266554400a0"))
        #expect(!APNsMessageID.isCanonical("123E4567-E89B-12D3-A456-4266554400A0"))
        #expect(APNsMessageID.isUUID("123E4567-E89B-12D3-A456-4266554400A0"))
        for bad in ["", "123e4567e89b12d3a4564266554400a0", "123e4567-e89b-12d3-a456-4266554400a", "123e4567-e89b-12d3-a456-4266554400a00",
                    "123e4567-e89b-12d3-a456_4266554400a0", "g23e4567-e89b-12d3-a456-4266554400a0"] {
            #expect(!APNsMessageID.isUUID(bad), "\(bad)")
        }
    }

    @Test func mintedIDsAreCanonicalVersion4AndRepeatable() {
        var a = SeededRandomSource(seed: 7)
        var b = SeededRandomSource(seed: 7)
        let first = APNsMessageID.make(using: &a)
        #expect(first == APNsMessageID.make(using: &b))
        #expect(APNsMessageID.isCanonical(first))
        #expect(Array(first)[14] == "4")
        #expect("89ab".contains(Array(first)[19]))
        #expect(APNsMessageID.make(using: &a) != first)
        var system = SystemRandomSource()
        #expect(APNsMessageID.isCanonical(APNsMessageID.make(using: &system)))
    }
}

@Suite("Push tokens")
struct PushTokenTests {
    @Test func shapeIsEvenLengthHexOf64To512() {
        #expect(PushToken.isWellFormed(String(repeating: "ab", count: 32)))
        #expect(PushToken.isWellFormed(String(repeating: "AB", count: 32)))
        #expect(PushToken.isWellFormed(String(repeating: "0f", count: 256)))
        func code(_ token: String) -> PushTokenError.Code? {
            do {
                try PushToken.validate(token)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code("") == .empty)
        #expect(code(String(repeating: "ab", count: 31)) == .tooShort)
        #expect(code(String(repeating: "a", count: 65)) == .oddLength)
        #expect(code(String(repeating: "ab", count: 257)) == .tooLong)
        #expect(code(String(repeating: "zz", count: 32)) == .notHexadecimal)
        #expect(code(String(repeating: "ab", count: 31) + "a ") == .notHexadecimal)
    }

    @Test func errorsNeverRepeatTheToken() {
        let token = String(repeating: "c0ffee", count: 11) + "x"
        do {
            try PushToken.validate(token)
            Issue.record("a token with x passed")
        } catch {
            #expect(!error.description.contains("c0ffee"))
            #expect(error.description.contains("67"))
        }
    }

    @Test func madeTokensAreWellFormedAndRepeatable() {
        var a = SeededRandomSource(seed: 42)
        var b = SeededRandomSource(seed: 42)
        let token = PushToken.make(using: &a)
        #expect(token.count == 64)
        #expect(PushToken.isWellFormed(token))
        #expect(token == PushToken.make(using: &b))
        #expect(PushToken.make(byteCount: 80, using: &a).count == 160)
    }

    @Test func kindsAreNeverCrossed() {
        #expect(PushTokenKind.device.accepts(.alert))
        #expect(PushTokenKind.device.accepts(.background))
        #expect(!PushTokenKind.device.accepts(.liveactivity))
        #expect(PushTokenKind.pushToStart.accepts(.liveactivity))
        #expect(!PushTokenKind.pushToStart.accepts(.alert))
        #expect(PushTokenKind.liveActivityUpdate.accepts(.liveactivity))
        #expect(!PushTokenKind.liveActivityUpdate.accepts(.alert))
        #expect(PushTokenKind.channel.accepts(.liveactivity))
        #expect(!PushTokenKind.channel.accepts(.alert))
        // An FCM token takes no APNs push at all.
        #expect(APNsPushType.allCases.allSatisfy { !PushTokenKind.fcm.accepts($0) })
        #expect(PushTokenKind.allCases.map(\.rawValue) == ["device", "push_to_start", "live_activity_update", "channel", "fcm"])
        #expect(PushTokenKind.deviceKinds.map(\.rawValue) == ["device", "push_to_start", "live_activity_update"])
    }
}

@Suite("Random sources")
struct RandomSourceTests {
    @Test func seededSourcesRepeat() {
        var a = SeededRandomSource(seed: 1)
        var b = SeededRandomSource(seed: 1)
        var c = SeededRandomSource(seed: 2)
        let first = (0..<5).map { _ in a.next() }
        #expect(first == (0..<5).map { _ in b.next() })
        #expect(first != (0..<5).map { _ in c.next() })
        #expect(Set(first).count == 5)
    }
}
