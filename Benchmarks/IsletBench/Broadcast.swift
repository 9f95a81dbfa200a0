import Foundation
import IsletCore
import Simulators

/// `islet-bench broadcast --subscribers N --holders M`: the same update, through
/// the API, to an activity on a broadcast channel with N phones subscribed, and to
/// an activity held by M devices on their own update tokens, one after the other on
/// one server and simulator. Each is timed from the request until every phone shows
/// the new state (the simulator has applied the broadcast to each subscriber, or
/// answered the last token push). Prints, for each, the seconds, the pushes Islet
/// sent and the phones reached, and the server's CPU seconds spent on it.
func broadcast(_ arguments: [String]) async throws {
    let islet = value("--islet", in: arguments) ?? ".build/release/islet"
    let subscribers = Int(value("--subscribers", in: arguments) ?? "1000000") ?? 1_000_000
    let holders = Int(value("--holders", in: arguments) ?? "100000") ?? 100_000
    var rig = try FanoutRig(islet: islet, channels: true)
    do {
        try await measureBroadcast(&rig, subscribers: subscribers, holders: holders)
    } catch {
        await rig.cleanUp()
        throw error
    }
}

private func measureBroadcast(_ rig: inout FanoutRig, subscribers: Int, holders: Int) async throws {
    // The token holders, written into the stopped server's database.
    rig.server.stop()
    try populate(path: rig.work + "/data/islet.sqlite", app: rig.appID, count: holders, sharedActivity: "tokens")
    try rig.restart()

    // The channel activity, started for phones that start it themselves.
    let http = try BenchHTTP(port: rig.server.port)
    let start = JSONValue.object([
        "activity_id": "match", "activity_type": "MatchAttributes", "attributes": ["home": "A", "away": "B"],
        "content_state": ["home": 0, "away": 0], "alert": ["title": "Kick-off", "body": "A v B"],
        "delivery": "channel", "channel_environment": "sandbox",
    ])
    let started = try http.request("POST", "/v1/apps/\(rig.appID)/activities", key: rig.serverKey, body: start.jsonText)
    guard started.status == 202 else {
        throw BenchHTTP.Failure(description: "the channel start answered \(started.status): \(String(decoding: started.body, as: UTF8.self))")
    }
    let shown = try JSONValue(parsing: try http.request("GET", "/v1/apps/\(rig.appID)/activities/match", key: rig.serverKey).body)
    guard let channelID = shown["channels"]?.arrayValue?.first?["apns_channel_id"]?.stringValue else {
        throw BenchHTTP.Failure(description: "the channel activity names no channel: \(shown)")
    }
    let began = Date()
    for n in 0..<subscribers {
        _ = try rig.simulator.engine.subscribe(channelID: channelID, token: "phone-\(n)")
    }
    emit("subscribe_seconds=\(String(format: "%.1f", Date().timeIntervalSince(began)))")

    // The token update: one push per holder.
    var cpu = rig.server.cpuSeconds
    var sent = Date()
    try rig.sendUpdate(activityID: "tokens")
    let tokensDone = rig.waitFor({ rig.counter.total >= holders }, timeout: 900)
    let tokenSeconds = Date().timeIntervalSince(sent)
    let tokenPushes = rig.counter.total
    let tokenCPU = rig.server.cpuSeconds - cpu
    emit("tokens_devices=\(holders)")
    emit("tokens_pushes=\(tokenPushes)")
    emit("tokens_seconds=\(String(format: "%.3f", tokenSeconds))")
    emit("tokens_server_cpu_seconds=\(String(format: "%.2f", tokenCPU))")
    emit("tokens_finished=\(tokensDone)")

    // The channel update: one broadcast, applied by the simulator to every
    // subscriber before it answers.
    cpu = rig.server.cpuSeconds
    sent = Date()
    try rig.sendUpdate(activityID: "match")
    let channelDone = rig.waitFor({ rig.counter.total >= tokenPushes + 1 }, timeout: 900)
    let channelSeconds = Date().timeIntervalSince(sent)
    let channelCPU = rig.server.cpuSeconds - cpu
    let reached = rig.simulator.engine.activities().reduce(0) {
        $0 + ($1.channelID == channelID && $1.contentState == ["home": 1, "away": 0] ? 1 : 0)
    }
    emit("channel_devices=\(subscribers)")
    emit("channel_pushes=\(rig.counter.total - tokenPushes)")
    emit("channel_reached=\(reached)")
    emit("channel_seconds=\(String(format: "%.3f", channelSeconds))")
    emit("channel_server_cpu_seconds=\(String(format: "%.2f", channelCPU))")
    emit("channel_finished=\(channelDone && reached == subscribers)")
    emit("server_peak_rss_mb=\(String(format: "%.1f", rig.server.peakRSSMegabytes))")
    await rig.cleanUp()
}
