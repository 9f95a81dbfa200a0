import Foundation
import IsletCore
import IsletTesting
import Simulators
import Storage
import Testing

/// Activities on iOS 18 broadcast channels, end to end through the API against the
/// simulators: started to an audience (each push-to-start subscribing its phone),
/// updated and ended with one broadcast per environment, `auto` choosing by the
/// broadcast threshold, and the channels' lifecycle.
@Suite("Channel activities: one broadcast per update, whatever the number of phones")
struct ChannelActivityTests {
    private static func start(
        _ h: ServerHarness, _ app: TestApp, _ activityID: String, audience: JSONValue?, extra: [String: JSONValue]
    ) async throws -> Reply {
        var body: [String: JSONValue] = [
            "activity_id": .string(activityID), "activity_type": "DeliveryAttributes",
            "attributes": ["order": .string(activityID)], "content_state": ["status": "preparing", "eta": 25],
            "alert": ["title": "Order", "body": "Preparing"],
        ]
        if let audience { body["audience"] = audience }
        for (name, value) in extra { body[name] = value }
        return try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: .object(body))
    }

    private static func onChannel(_ h: ServerHarness, _ simulator: APNsSimulator, _ apnsID: String) -> [SimulatedActivity] {
        simulator.engine.activities().filter { $0.channelID == apnsID }
    }

    private static func broadcasts(_ simulator: APNsSimulator) -> [PushRecord] {
        simulator.engine.pushes().filter { $0.path.hasPrefix("/4/broadcasts/") }
    }

    @Test func anActivityOnAChannelReachesEverySubscribedPhoneWithOneBroadcastPerUpdate() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            for n in 1...3 { try await h.registerStartable(app, "phone-\(n)") }
            let started = try await Self.start(
                h, app, "match-1", audience: ["device_ids": ["phone-1", "phone-2", "phone-3"]],
                extra: ["delivery": "channel"])
            #expect(started.status == 202, "\(started.json)")
            #expect(started["delivery"] == "channel")
            #expect(started["targets"]?.int64Value == 3)
            #expect(started["channel_targets"]?.int64Value == 3)
            let channelID = try #require(started["channels"]?.arrayValue?.first?.stringValue)
            #expect(started["channels"]?.arrayValue?.count == 1)

            // Islet created the channel at APNs, in the devices' environment, and
            // every push-to-start subscribed its phone to it.
            let simulated = try #require(h.sandbox.engine.channels().first)
            #expect(h.sandbox.engine.channels().count == 1 && h.production.engine.channels().isEmpty)
            let starts = try await h.settledPushes(app, "match-1", count: 3)
            #expect(starts.allSatisfy { $0["status"] == "sent" && $0["token_kind"] == "push_to_start" }, "\(starts)")
            _ = try await h.eventually { Self.onChannel(h, h.sandbox, simulated.id).count == 3 }
            #expect(Self.onChannel(h, h.sandbox, simulated.id).allSatisfy { $0.updateToken == nil })
            let startPayloads = h.sandbox.engine.pushes().filter { $0.event == "start" }.compactMap(\.payload)
            #expect(startPayloads.count == 3)
            #expect(startPayloads.allSatisfy {
                $0["aps"]?["input-push-channel"]?.stringValue == simulated.id && $0["aps"]?["input-push-token"] == nil
            })

            // The activity names its channel, which is how the app learns it; the
            // channel names the activity.
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/match-1", key: app.serverKey)
            #expect(shown["delivery"] == "channel")
            #expect(shown["channels"]?.arrayValue?.first?["apns_channel_id"]?.stringValue == simulated.id)
            #expect(shown["channels"]?.arrayValue?.first?["channel_id"]?.stringValue == channelID)
            #expect(shown["channels"]?.arrayValue?.first?["environment"] == "sandbox")
            let channel = try await h.call("GET", "/v1/apps/\(app.id)/channels/\(channelID)", key: app.serverKey)
            #expect(channel["activity_id"] == "match-1")
            // Each phone's copy listens on the channel: active, with no update token
            // to wait for, and never reported as a start that did not show.
            #expect(shown["devices"]?.arrayValue?.map { $0["status"] } == ["active", "active", "active"])
            #expect(shown["devices"]?.arrayValue?.allSatisfy { $0["on_channel"] == true } == true)
            h.clock.advance(by: 11 * 60)
            #expect(await h.application.services.events.reportUnconfirmedStarts() == 0)

            // A start the transaction would refuse creates no channel first.
            let twice = try await Self.start(
                h, app, "match-1", audience: ["device_ids": ["phone-1"]], extra: ["delivery": "channel"])
            #expect(twice.status == 409)
            #expect(h.sandbox.engine.channels().count == 1)
            let past = try await Self.start(
                h, app, "match-9", audience: ["device_ids": ["phone-1"]],
                extra: ["delivery": "channel", "end_at": .string(RFC3339.string(h.clock.now().addingTimeInterval(-60)))])
            #expect(past.status == 422 && past.errorFields == ["end_at"], "\(past.json)")
            #expect(h.sandbox.engine.channels().count == 1)
            // A fourth phone runs the app, which started the activity subscribed.
            let local = try h.sandbox.engine.subscribe(channelID: simulated.id, token: "phone-4")

            // A webhook on push.sent: while one is there, each push sent is an event.
            let hook = try await h.call(
                "POST", "/v1/apps/\(app.id)/webhooks", key: app.serverKey,
                json: ["url": "https://8.8.8.8/hooks", "events": ["push.sent"]])
            #expect(hook.status == 201, "\(hook.json)")

            // Each update is one broadcast, whatever the number of phones.
            for (n, score) in ["1-0", "2-0"].enumerated() {
                let updated = try await h.call(
                    "POST", "/v1/apps/\(app.id)/activities/match-1/update", key: app.serverKey,
                    json: ["content_state": ["status": .string(score), "eta": .integer(Int64(n))]])
                #expect(updated.status == 202, "\(updated.json)")
                #expect(updated["targets"]?.int64Value == 1)
                #expect(updated["broadcasts"]?.int64Value == 1)
                _ = try await h.settledPushes(app, "match-1", count: 4 + n)
            }
            #expect(Self.broadcasts(h.sandbox).count == 2)
            let states = Self.onChannel(h, h.sandbox, simulated.id).map { $0.contentState?["status"]?.stringValue }
            #expect(states == ["2-0", "2-0", "2-0", "2-0"])
            #expect(h.sandbox.engine.activity(id: local.id)?.updateCount == 2)

            // Its pushes list shows one record per broadcast, with APNs's unique id.
            let pushes = try await h.settledPushes(app, "match-1", count: 5)
            let broadcast = try #require(pushes.last)
            #expect(broadcast["token_kind"] == "channel")
            #expect(broadcast["channel_id"]?.stringValue == channelID)
            #expect(broadcast["device_id"] == .null)
            #expect(broadcast["event"] == "update" && broadcast["status"] == "sent")
            #expect(broadcast["apns_unique_id"]?.stringValue.map(APNsMessageID.isUUID) == true)
            #expect(Self.broadcasts(h.sandbox).last?.headers["apns-expiration"] == "0")
            let sentEvents = try await h.call("GET", "/v1/apps/\(app.id)/events?types=push.sent", key: app.serverKey)
            let broadcastEvent = try #require(sentEvents["items"]?.arrayValue?.last?["data"])
            #expect(broadcastEvent["channel_id"]?.stringValue == channelID, "\(broadcastEvent)")
            #expect(broadcastEvent["device_id"] == nil)
            #expect(broadcastEvent["token_kind"] == "channel")

            // The end is one broadcast too, and ends every phone's copy.
            let ended = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/match-1/end", key: app.serverKey,
                json: ["content_state": ["status": "full time", "eta": 0]])
            #expect(ended["broadcasts"]?.int64Value == 1)
            _ = try await h.settledPushes(app, "match-1", count: 6)
            #expect(Self.broadcasts(h.sandbox).count == 3)
            #expect(Self.onChannel(h, h.sandbox, simulated.id).allSatisfy {
                $0.status != .active && $0.contentState?["status"] == "full time"
            })
        }
    }

    @Test func aPhoneBeforeIOS18GetsItsOwnTokenBesideTheChannel() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            for (device, version) in [("old", "17.4"), ("new", "18.1")] {
                try await h.registerStartable(app, device)
                let patched = try await h.call(
                    "PUT", "/v1/apps/\(app.id)/devices/\(device)", key: app.deviceKey,
                    json: ["platform": "ios", "environment": "sandbox", "os_version": .string(version)],
                    headers: h.secretHeader(app, device))
                #expect(patched["os_version"]?.stringValue == version, "\(patched.json)")
            }
            let started = try await Self.start(
                h, app, "match-2", audience: ["device_ids": ["old", "new"]], extra: ["delivery": "channel"])
            #expect(started["targets"]?.int64Value == 2)
            #expect(started["channel_targets"]?.int64Value == 1)
            _ = try await h.settledPushes(app, "match-2", count: 2)
            let simulated = try #require(h.sandbox.engine.channels().first)
            _ = try await h.eventually { Self.onChannel(h, h.sandbox, simulated.id).count == 1 }
            let token = try await h.simulatedUpdateToken(activityID: "match-2")
            #expect(try await h.registerUpdateToken(app, "old", "match-2", token: token).status == 201)

            let updated = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/match-2/update", key: app.serverKey,
                json: ["content_state": ["status": "1-1", "eta": 3]])
            #expect(updated["targets"]?.int64Value == 2)
            #expect(updated["broadcasts"]?.int64Value == 1)
            let pushes = try await h.settledPushes(app, "match-2", count: 4)
            #expect(Set(pushes.suffix(2).compactMap { $0["token_kind"]?.stringValue }) == ["channel", "live_activity_update"])
            let all = h.sandbox.engine.activities().filter { $0.attributes?["order"] == "match-2" }
            #expect(all.count == 2)
            #expect(all.allSatisfy { $0.contentState?["status"] == "1-1" })
        }
    }

    /// A content state whose `status` is `bytes` letters long.
    private static func state(padding bytes: Int) -> JSONValue {
        ["status": .string(String(repeating: "x", count: bytes)), "eta": 1]
    }

    @Test func aBroadcastTakesAPNsBroadcastSizeNotATokensAndNoMore() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let started = try await Self.start(
                h, app, "big-1", audience: nil, extra: ["delivery": "channel", "channel_environment": "production"])
            #expect(started.status == 202, "\(started.json)")
            let simulated = try #require(h.production.engine.channels().first)
            let phone = try h.production.engine.subscribe(channelID: simulated.id, token: "phone-1")

            // Between a token's 4,096 bytes and a broadcast's 5,120: one broadcast,
            // which APNs takes and hands to the subscribed phone.
            let updated = try await h.update(app, "big-1", state: Self.state(padding: 4_600))
            #expect(updated.status == 202, "\(updated.json)")
            #expect(updated["broadcasts"]?.int64Value == 1)
            let pushes = try await h.settledPushes(app, "big-1", count: 1)
            #expect(pushes.last?["status"] == "sent", "\(pushes)")
            let broadcast = try #require(Self.broadcasts(h.production).last)
            #expect((4_097...5_120).contains(broadcast.payloadBytes), "\(broadcast.payloadBytes)")
            #expect(h.production.engine.activity(id: phone.id)?.contentState?["status"]?.stringValue?.count == 4_600)

            // Over 5,120: refused, naming the broadcast's limit and the field.
            let over = try await h.update(app, "big-1", state: Self.state(padding: 5_300))
            #expect(over.status == 422, "\(over.json)")
            #expect(over.errorFields == ["content_state"], "\(over.json)")
            let detail = over["detail"]?.stringValue ?? ""
            #expect(detail.contains("the broadcast payload is 5,"), "\(detail)")
            #expect(detail.contains("APNs takes at most 5,120 on a channel"), "\(detail)")
            #expect(Self.broadcasts(h.production).count == 1)

            // The end goes the same way.
            let ended = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/big-1/end", key: app.serverKey,
                json: ["content_state": Self.state(padding: 4_600)])
            #expect(ended.status == 202, "\(ended.json)")
            #expect(ended["broadcasts"]?.int64Value == 1)
        }
    }

    @Test func aChannelActivityWithACopyOnItsOwnTokenTakesATokensSize() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            for (device, version) in [("old", "17.4"), ("new", "18.1")] {
                try await h.registerStartable(app, device)
                let patched = try await h.call(
                    "PUT", "/v1/apps/\(app.id)/devices/\(device)", key: app.deviceKey,
                    json: ["platform": "ios", "environment": "sandbox", "os_version": .string(version)],
                    headers: h.secretHeader(app, device))
                #expect(patched["os_version"]?.stringValue == version, "\(patched.json)")
            }
            let started = try await Self.start(
                h, app, "big-2", audience: ["device_ids": ["old", "new"]], extra: ["delivery": "channel"])
            #expect(started["channel_targets"]?.int64Value == 1, "\(started.json)")
            _ = try await h.settledPushes(app, "big-2", count: 2)
            let token = try await h.simulatedUpdateToken(activityID: "big-2")
            #expect(try await h.registerUpdateToken(app, "old", "big-2", token: token).status == 201)

            // The old phone holds its own update token, which takes 4,096 bytes:
            // what the broadcast alone could carry is refused, naming that limit.
            let refused = try await h.update(app, "big-2", state: Self.state(padding: 4_600))
            #expect(refused.status == 422, "\(refused.json)")
            #expect(refused.errorFields == ["content_state"], "\(refused.json)")
            let detail = refused["detail"]?.stringValue ?? ""
            #expect(detail.contains("APNs takes at most 4,096 for a device's own update token"), "\(detail)")
            #expect(Self.broadcasts(h.sandbox).isEmpty)
            let refusedEnd = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/big-2/end", key: app.serverKey,
                json: ["content_state": Self.state(padding: 4_600)])
            #expect(refusedEnd.status == 422, "\(refusedEnd.json)")
            #expect(refusedEnd["detail"]?.stringValue?.contains("4,096 for a device's own update token") == true)

            // Within 4,096, both ways take it.
            let updated = try await h.update(app, "big-2", state: Self.state(padding: 3_900))
            #expect(updated.status == 202, "\(updated.json)")
            #expect(updated["targets"]?.int64Value == 2 && updated["broadcasts"]?.int64Value == 1, "\(updated.json)")
        }
    }

    @Test func withoutAnAudienceTheAppStartsTheActivitySubscribedToItsChannel() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let started = try await Self.start(
                h, app, "flight-1", audience: nil, extra: ["delivery": "channel", "channel_environment": "production"])
            #expect(started.status == 202, "\(started.json)")
            #expect(started["targets"]?.int64Value == 0)
            let simulated = try #require(h.production.engine.channels().first)
            #expect(h.sandbox.engine.channels().isEmpty)
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/flight-1", key: app.serverKey)
            let apnsID = try #require(shown["channels"]?.arrayValue?.first?["apns_channel_id"]?.stringValue)
            #expect(apnsID == simulated.id)
            let phone = try h.production.engine.subscribe(channelID: apnsID, token: "phone-1")
            let updated = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/flight-1/update", key: app.serverKey,
                json: ["content_state": ["status": "boarding", "eta": 5]])
            #expect(updated["broadcasts"]?.int64Value == 1)
            _ = try await h.settledPushes(app, "flight-1", count: 1)
            #expect(h.production.engine.activity(id: phone.id)?.contentState?["status"] == "boarding")

            // A given channel is used as it is; one a running activity uses is refused.
            let channelID = try #require(started["channels"]?.arrayValue?.first?.stringValue)
            let again = try await Self.start(
                h, app, "flight-2", audience: nil, extra: ["delivery": "channel", "channel_id": .string(channelID)])
            #expect(again.status == 409, "\(again.json)")
            let deleting = try await h.call("DELETE", "/v1/apps/\(app.id)/channels/\(channelID)", key: app.serverKey)
            #expect(deleting.status == 409)

            // Fields that do not go together are named.
            let noAudience = try await Self.start(h, app, "flight-3", audience: nil, extra: [:])
            #expect(noAudience.status == 422 && noAudience.errorFields == ["audience"], "\(noAudience.json)")
            let stray = try await Self.start(
                h, app, "flight-3", audience: ["device_ids": ["x"]], extra: ["channel_id": .string(channelID)])
            #expect(stray.status == 422 && stray.errorFields == ["channel_id"])
            let unknown = try await Self.start(
                h, app, "flight-3", audience: nil, extra: ["delivery": "channel", "channel_id": "nochannel"])
            #expect(unknown.status == 422 && unknown.errorFields == ["channel_id"], "\(unknown.json)")
            let scheduled = try await Self.start(
                h, app, "flight-3", audience: nil,
                extra: ["delivery": "channel", "send_at": .string(RFC3339.string(h.clock.now().addingTimeInterval(60)))])
            #expect(scheduled.status == 422 && scheduled.errorFields == ["delivery"])
            let invalid = try await Self.start(h, app, "flight-3", audience: nil, extra: ["delivery": "sometimes"])
            #expect(invalid.status == 422 && invalid.errorFields.contains("delivery"))
        }
    }

    @Test func autoPicksAChannelAboveTheThresholdAndTokensAtOrBelowIt() async throws {
        try await ServerHarness.with(configure: { $0.broadcastThreshold = 2 }) { h in
            let app = try await h.createApp()
            for n in 1...3 { try await h.registerStartable(app, "fan-\(n)", userID: "fans") }
            let few = try await Self.start(
                h, app, "small", audience: ["device_ids": ["fan-1", "fan-2"]], extra: ["delivery": "auto"])
            #expect(few["delivery"] == "tokens", "\(few.json)")
            #expect(few["delivery_reason"]?.stringValue?.contains("not more than the broadcast threshold of 2") == true)
            #expect(h.sandbox.engine.channels().isEmpty)
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/small", key: app.serverKey)
            #expect(shown["delivery"] == "tokens")

            let many = try await Self.start(h, app, "large", audience: ["user_ids": ["fans"]], extra: ["delivery": "auto"])
            #expect(many["delivery"] == "channel", "\(many.json)")
            #expect(many["delivery_reason"]?.stringValue?.contains("3 device(s) can take a channel") == true)
            #expect(many["channel_targets"]?.int64Value == 3)
            #expect(h.sandbox.engine.channels().count == 1)

            // A device on iOS 17 does not count toward the threshold.
            let patched = try await h.call(
                "PUT", "/v1/apps/\(app.id)/devices/fan-3", key: app.deviceKey,
                json: ["platform": "ios", "environment": "sandbox", "os_version": "17.5"], headers: h.secretHeader(app, "fan-3"))
            #expect(patched.status == 200, "\(patched.json)")
            let fewer = try await Self.start(h, app, "large-2", audience: ["user_ids": ["fans"]], extra: ["delivery": "auto"])
            #expect(fewer["delivery"] == "tokens")
            #expect(fewer["delivery_reason"]?.stringValue?.contains("2 device(s) (of 3)") == true, "\(fewer.json)")
        }
    }

    @Test func aChannelIsDeletedOnceItsActivityIsOverAndForgottenWhenAPNsLostIt() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1")
            let started = try await Self.start(
                h, app, "race-1", audience: ["device_ids": ["phone-1"]], extra: ["delivery": "channel"])
            let channelID = try #require(started["channels"]?.arrayValue?.first?.stringValue)
            _ = try await h.settledPushes(app, "race-1", count: 1)
            let channels = h.application.services.channels
            // Running: kept.
            #expect(await channels.retireEnded() == 0)
            _ = try await h.call("POST", "/v1/apps/\(app.id)/activities/race-1/end", key: app.serverKey, json: [:])
            _ = try await h.settledPushes(app, "race-1", count: 2)
            // Ended, but the device may show it for the end window: kept.
            h.clock.advance(by: 4 * 3600 - 60)
            #expect(await channels.retireEnded() == 0)
            #expect(h.sandbox.engine.channels().count == 1)
            h.clock.advance(by: 60)
            #expect(await channels.retireEnded() == 1)
            #expect(h.sandbox.engine.channels().isEmpty)
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/channels/\(channelID)", key: app.serverKey).status == 404)

            // A channel the app made itself is never deleted for it.
            let own = try await h.call("POST", "/v1/apps/\(app.id)/channels", key: app.serverKey, json: ["environment": "sandbox"])
            let ownID = try #require(own["channel_id"]?.stringValue)
            let reused = try await Self.start(
                h, app, "race-2", audience: ["device_ids": ["phone-1"]],
                extra: ["delivery": "channel", "channel_id": .string(ownID)])
            #expect(reused["channels"] == [.string(ownID)], "\(reused.json)")
            #expect(h.sandbox.engine.channels().count == 1)
            _ = try await h.settledPushes(app, "race-2", count: 1)

            // APNs no longer has it: the broadcast fails naming why, and Islet
            // forgets the channel.
            let apnsID = try #require(own["apns_channel_id"]?.stringValue)
            #expect(h.sandbox.engine.deleteChannel(id: apnsID))
            _ = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/race-2/update", key: app.serverKey,
                json: ["content_state": ["status": "lap 2", "eta": 9]])
            let pushes = try await h.settledPushes(app, "race-2", count: 2)
            #expect(pushes.last?["status"] == "failed")
            #expect(pushes.last?["reason"] == "ChannelNotRegistered")
            _ = try await h.eventually {
                try await h.call("GET", "/v1/apps/\(app.id)/channels/\(ownID)", key: app.serverKey).status == 404
            }
            let events = try await h.call("GET", "/v1/apps/\(app.id)/events?types=token.rejected", key: app.serverKey)
            #expect(events["items"]?.arrayValue?.last?["data"]?["action"] == "channel_forgotten", "\(events.json)")
            #expect(events["items"]?.arrayValue?.last?["data"]?["channel_id"]?.stringValue == ownID)
            h.clock.advance(by: 13 * 3600)
            #expect(await channels.retireEnded() == 0)
            let list = try await h.call("GET", "/v1/apps/\(app.id)/channels", key: app.serverKey)
            #expect(list["items"]?.arrayValue?.isEmpty == true)
        }
    }

    /// Records `count` channels of `app` in `environment` as if created earlier.
    private static func fill(_ h: ServerHarness, _ app: TestApp, _ environment: APNsEnvironment, from: Int, to: Int) throws {
        let now = h.clock.now()
        try h.application.services.store.writeNow { session in
            for n in from..<to {
                try session.insertChannel(
                    appID: app.id,
                    ChannelRecord(
                        channelID: "fill-\(n)", apnsChannelID: "fill\(n)=", environment: environment, storesMostRecent: false,
                        activityID: nil, createdAt: now))
            }
        }
    }

    @Test func nearAPNsLimitAutoGoesOnTokensAndSaysSoAndAtItACreateIsRefused() async throws {
        try await ServerHarness.with(configure: { $0.broadcastThreshold = 0 }) { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1")
            try Self.fill(h, app, .sandbox, from: 0, to: 9_499)
            let below = try await Self.start(h, app, "one", audience: ["device_ids": ["phone-1"]], extra: ["delivery": "auto"])
            #expect(below["delivery"] == "channel", "\(below.json)")
            // Now 9,500 in the sandbox: 95% of APNs's limit.
            let near = try await Self.start(h, app, "two", audience: ["device_ids": ["phone-1"]], extra: ["delivery": "auto"])
            #expect(near.status == 202)
            #expect(near["delivery"] == "tokens", "\(near.json)")
            #expect(near["delivery_reason"]?.stringValue?.contains("9500 channels in sandbox") == true)
            let events = try await h.call("GET", "/v1/apps/\(app.id)/events?types=channel.limit_near", key: app.serverKey)
            let event = try #require(events["items"]?.arrayValue?.first, "\(events.json)")
            #expect(event["data"]?["activity_id"] == "two", "\(event)")
            #expect(event["data"]?["delivery"] == "tokens")

            // At the limit, Islet creates no channel at all; production is apart.
            try Self.fill(h, app, .sandbox, from: 9_499, to: 9_999)
            let full = try await Self.start(h, app, "three", audience: ["device_ids": ["phone-1"]], extra: ["delivery": "channel"])
            #expect(full.status == 409, "\(full.json)")
            #expect(full["detail"]?.stringValue?.contains("10000 channels in sandbox") == true)
            let create = try await h.call("POST", "/v1/apps/\(app.id)/channels", key: app.serverKey, json: ["environment": "sandbox"])
            #expect(create.status == 409)
            #expect(h.sandbox.engine.channels().count == 1)
            let production = try await h.call(
                "POST", "/v1/apps/\(app.id)/channels", key: app.serverKey, json: ["environment": "production"])
            #expect(production.status == 201)
        }
    }

    @Test func aStartThatFailsDeletesTheChannelsMadeForIt() async throws {
        try await ServerHarness.with(simulators: { options in
            if options.engine.environment == .production { options.engine.channelLimit = 0 }
        }) { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "sandbox-phone")
            try await h.registerStartable(app, "production-phone", environment: .production)
            let refused = try await Self.start(
                h, app, "both", audience: ["device_ids": ["sandbox-phone", "production-phone"]], extra: ["delivery": "channel"])
            #expect(refused.status == 409, "\(refused.json)")
            #expect(refused["detail"]?.stringValue?.contains("CannotCreateChannelConfig") == true)
            // The sandbox's channel, made first, is deleted at APNs and forgotten.
            #expect(h.sandbox.engine.channels().isEmpty)
            let list = try await h.call("GET", "/v1/apps/\(app.id)/channels", key: app.serverKey)
            #expect(list["items"]?.arrayValue?.isEmpty == true, "\(list.json)")
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/activities/both", key: app.serverKey).status == 404)
        }
    }
}
