import Foundation
import IsletCore
import Simulators
import Testing

@Suite("Simulator: method, path and device token")
struct RoutingTests {
    let token = SimulatorHarness.token(0xA1)

    @Test func onlyPostIsAllowed() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, method: "GET"), 405, .methodNotAllowed)
        expectRefusal(sim.send(to: token, method: "PUT"), 405, .methodNotAllowed)
        #expect(sim.send(to: token).status == 200)
    }

    @Test func otherPathsAreBadPath() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, path: "/3/devices/\(token)"), 404, .badPath)
        expectRefusal(sim.send(to: token, path: "/"), 404, .badPath)
        expectRefusal(sim.send(to: token, path: "/4/broadcast/apps/com.example.app"), 404, .badPath)
    }

    @Test func aPathWithoutTokenIsMissingDeviceToken() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, path: "/3/device/"), 400, .missingDeviceToken)
        expectRefusal(sim.send(to: token, path: "/3/device"), 400, .missingDeviceToken)
    }

    @Test func tokensMustBeEvenLengthHex() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: String(repeating: "zz", count: 32)), 400, .badDeviceToken)
        expectRefusal(sim.send(to: String(repeating: "a", count: 65)), 400, .badDeviceToken)
        expectRefusal(sim.send(to: "abcd"), 400, .badDeviceToken)
        #expect(sim.lastRecord?.answer.note?.contains("fewer than 64") == true)
        // Uppercase hex is still hex.
        #expect(sim.send(to: token.uppercased()).status == 200)
    }

    @Test func pathIsCheckedBeforeTheProviderToken() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: "nothex", providerToken: "garbage"), 400, .badDeviceToken)
        expectRefusal(sim.send(to: token, method: "GET", providerToken: "garbage"), 405, .methodNotAllowed)
    }
}

@Suite("Simulator: apns headers")
struct HeaderTests {
    let token = SimulatorHarness.token(0xB2)

    @Test func topicIsRequired() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, topic: nil), 400, .missingTopic)
    }

    @Test func aTopicThatIsNoBundleIDIsBadTopic() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, topic: ""), 400, .badTopic)
        expectRefusal(sim.send(to: token, topic: "com.example app.push-type.liveactivity"), 400, .badTopic)
        expectRefusal(sim.send(to: token, topic: ".push-type.liveactivity"), 400, .badTopic)
    }

    @Test func liveActivityPushesNeedTheLiveActivityTopic() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, topic: SimulatorHarness.appTopic), 400, .invalidPushType)
        #expect(sim.lastRecord?.answer.note?.contains(".push-type.liveactivity") == true)
        // An alert aimed at the Live Activity topic does not fit either.
        expectRefusal(
            sim.send(to: token, payload: SimulatorHarness.alert(), pushType: "alert"), 400, .invalidPushType)
        #expect(sim.send(to: token, payload: SimulatorHarness.start(timestamp: sim.now)).status == 200)
    }

    @Test func aMissingPushTypeIsTakenFromTheTopicWithAWarning() throws {
        let sim = try SimulatorHarness()
        let start = sim.send(to: token, payload: SimulatorHarness.start(timestamp: sim.now), pushType: nil)
        #expect(start.status == 200)
        let record = try #require(sim.lastRecord)
        #expect(record.deviceOutcome == .started, "the push was read as a Live Activity start")
        #expect(record.warnings.count == 1)
        #expect(record.warnings.first?.contains("apns-push-type") == true)
        #expect(record.warnings.first?.contains("liveactivity") == true)
        // On the app's own topic it is an alert.
        #expect(sim.send(to: SimulatorHarness.token(0x77), payload: SimulatorHarness.alert(), pushType: nil, topic: SimulatorHarness.appTopic).status == 200)
        #expect(sim.lastRecord?.warnings.first?.contains("taken to be alert") == true)
        // A push type that is named is not warned about.
        #expect(sim.send(to: SimulatorHarness.token(0x77), payload: SimulatorHarness.alert(), pushType: "alert", topic: SimulatorHarness.appTopic).status == 200)
        #expect(sim.lastRecord?.warnings == [])
    }

    @Test func headerNamesMatchInAnyCase() throws {
        let sim = try SimulatorHarness()
        let id = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
        let response = sim.send(
            to: SimulatorHarness.token(0x78), payload: SimulatorHarness.alert(), pushType: nil, topic: nil,
            headers: ["authorization": nil, "apns-priority": nil],
            extraHeaders: [
                ("Authorization", "Bearer \(sim.providerToken)"), ("APNs-Topic", SimulatorHarness.appTopic),
                ("Apns-Push-Type", "alert"), ("APNS-ID", id), ("Apns-Priority", "5"),
            ])
        #expect(response.status == 200)
        #expect(response.header("apns-id") == id)
        let record = try #require(sim.lastRecord)
        #expect(record.pushType == "alert")
        #expect(record.answer.apnsID == id)
        #expect(record.warnings == [])
    }

    @Test func aMissingApnsIDIsMintedAndAnUppercaseOneEchoedWithAWarning() throws {
        let sim = try SimulatorHarness()
        let minted = sim.sendAlert(to: SimulatorHarness.token(0x79))
        #expect(minted.status == 200)
        #expect(minted.header("apns-id").map(APNsMessageID.isUUID) == true)
        #expect(sim.lastRecord?.warnings == [])
        let upper = "0A1B2C3D-4E5F-4A6B-8C7D-9E0F1A2B3C4D"
        let echoed = sim.send(
            to: SimulatorHarness.token(0x79), payload: SimulatorHarness.alert(), pushType: "alert",
            topic: SimulatorHarness.appTopic, headers: ["apns-id": upper])
        #expect(echoed.status == 200)
        #expect(echoed.header("apns-id") == upper)
        #expect(sim.lastRecord?.warnings.count == 1)
        #expect(sim.lastRecord?.warnings.first?.contains("uppercase") == true)
    }

    @Test func anUppercaseDeviceTokenIsMatchedWithAWarning() throws {
        let sim = try SimulatorHarness()
        let lower = SimulatorHarness.token(0xAB)
        #expect(sim.sendAlert(to: lower).status == 200)
        #expect(sim.lastRecord?.warnings == [])
        #expect(sim.sendAlert(to: lower.uppercased()).status == 200)
        let record = try #require(sim.lastRecord)
        #expect(record.tokenKind == .device)
        #expect(record.warnings.count == 1)
        #expect(record.warnings.first?.contains("uppercase") == true)
        #expect(sim.engine.tokens().count == 1, "one device, whatever the case of its token")
    }

    @Test func unknownPushTypesAreInvalid() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, pushType: "LiveActivity"), 400, .invalidPushType)
        expectRefusal(sim.send(to: token, pushType: "liveactivities"), 400, .invalidPushType)
    }

    @Test func priorityIsOneFiveOrTen() throws {
        let sim = try SimulatorHarness()
        for bad in ["0", "3", "high", "100"] {
            expectRefusal(sim.send(to: token, headers: ["apns-priority": bad]), 400, .badPriority)
        }
        for good in ["1", "5", "10"] {
            #expect(sim.send(to: token, headers: ["apns-priority": good]).status == 200)
        }
    }

    @Test func apnsIDMustBeAUUIDAndIsEchoed() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, headers: ["apns-id": "not-a-uuid"]), 400, .badMessageId)
        let id = "123e4567-e89b-12d3-a456-4266554400a0"
        let echoed = sim.send(to: token, headers: ["apns-id": id])
        #expect(echoed.status == 200)
        #expect(echoed.header("apns-id") == id)
        let minted = sim.send(to: token)
        let mintedID = try #require(minted.header("apns-id"))
        #expect(APNsMessageID.isCanonical(mintedID))
        #expect(mintedID != id)
        // Refusals echo the id too, so that a client can match them.
        let refused = sim.send(to: token, headers: ["apns-priority": "7", "apns-id": id])
        #expect(refused.status == 400)
        #expect(refused.header("apns-id") == id)
    }

    @Test func collapseIDIsAtMost64Bytes() throws {
        let sim = try SimulatorHarness()
        #expect(sim.send(to: token, headers: ["apns-collapse-id": String(repeating: "c", count: 64)]).status == 200)
        expectRefusal(sim.send(to: token, headers: ["apns-collapse-id": String(repeating: "c", count: 65)]), 400, .badCollapseId)
        // Bytes, not characters: 22 three-byte characters are 66 bytes.
        expectRefusal(sim.send(to: token, headers: ["apns-collapse-id": String(repeating: "€", count: 22)]), 400, .badCollapseId)
    }

    @Test func expirationIsANumber() throws {
        let sim = try SimulatorHarness()
        for bad in ["tomorrow", "-1", "1.5", ""] {
            expectRefusal(sim.send(to: token, headers: ["apns-expiration": bad]), 400, .badExpirationDate)
        }
        #expect(sim.send(to: token, headers: ["apns-expiration": "0"]).status == 200)
        #expect(sim.send(to: token, headers: ["apns-expiration": "1800086400"]).status == 200)
    }

    @Test func repeatedHeadersAreDuplicateHeaders() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, extraHeaders: [("apns-priority", "5")]), 400, .duplicateHeaders)
        expectRefusal(sim.send(to: token, extraHeaders: [("authorization", "bearer x")]), 400, .duplicateHeaders)
        let record = try #require(sim.lastRecord)
        #expect(record.headers["authorization"]?.contains(", ") == true)
    }

    @Test func headersAreCheckedInAPNsOrder() throws {
        let sim = try SimulatorHarness()
        // Topic before priority before id before payload.
        expectRefusal(
            sim.send(to: token, body: Data(), topic: nil, headers: ["apns-priority": "7", "apns-id": "x"]), 400, .missingTopic)
        expectRefusal(sim.send(to: token, body: Data(), headers: ["apns-priority": "7", "apns-id": "x"]), 400, .badPriority)
        expectRefusal(sim.send(to: token, body: Data(), headers: ["apns-id": "x"]), 400, .badMessageId)
        // The provider token before any apns header.
        expectRefusal(sim.send(to: token, topic: nil, headers: ["authorization": nil]), 403, .missingProviderToken)
    }
}

@Suite("Simulator: payload")
struct PayloadTests {
    let token = SimulatorHarness.token(0xC3)

    @Test func anEmptyBodyIsPayloadEmpty() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, body: Data()), 400, .payloadEmpty)
    }

    @Test func moreThan4096BytesIsPayloadTooLarge() throws {
        let sim = try SimulatorHarness()
        func body(size: Int) -> Data {
            let skeleton = SimulatorHarness.start(timestamp: sim.now, extra: ["pad": ""]).jsonText
            let padded = SimulatorHarness.start(
                timestamp: sim.now, extra: ["pad": .string(String(repeating: "x", count: size - skeleton.utf8.count))])
            return Data(padded.jsonText.utf8)
        }
        #expect(body(size: 4096).count == 4096)
        #expect(sim.send(to: token, body: body(size: 4096)).status == 200)
        expectRefusal(sim.send(to: token, body: body(size: 4097)), 413, .payloadTooLarge)
        // VoIP pushes may carry 5 KB.
        let voip = Data((#"{"aps":{},"x":""# + String(repeating: "v", count: 4500) + #""}"#).utf8)
        #expect(sim.send(to: SimulatorHarness.token(0xC4), body: voip, pushType: "voip", topic: "com.example.app.voip").status == 200)
    }

    @Test func theBodyMustBeAJSONObjectWithAnAPSDictionary() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, body: Data("not json".utf8)), 400, .payloadEmpty)
        #expect(sim.lastRecord?.answer.note == "the body is not JSON")
        expectRefusal(sim.send(to: token, body: Data("[1,2]".utf8)), 400, .payloadEmpty)
        expectRefusal(sim.send(to: token, payload: ["data": 1]), 400, .payloadEmpty)
        #expect(sim.lastRecord?.answer.note == "the payload has no aps dictionary")
        expectRefusal(sim.send(to: token, payload: ["aps": "start"]), 400, .payloadEmpty)
        // The record keeps what could be parsed.
        #expect(sim.lastRecord?.payload == ["aps": "start"])
    }
}
