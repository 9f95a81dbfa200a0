import Foundation
import IsletCore
import SQLiteStorage
import Storage

/// `islet-bench populate --database PATH --app A --tokens N [--activity ID]`: writes N
/// devices, each holding the update token of an activity of its own (or, with
/// `--activity`, all of them holding one activity: a fan-out of N), straight into a
/// stopped server's database (registering a million through the API would take the
/// benchmark's whole budget). Prints `populated=N seconds=…`.
func populate(_ arguments: [String]) throws {
    guard let path = value("--database", in: arguments), let app = value("--app", in: arguments),
        let count = value("--tokens", in: arguments).flatMap(Int.init)
    else {
        throw BenchHTTP.Failure(description: "populate needs --database, --app and --tokens")
    }
    let started = Date()
    try populate(path: path, app: app, count: count, sharedActivity: value("--activity", in: arguments))
    emit("populated=\(count)")
    emit("seconds=\(String(format: "%.1f", Date().timeIntervalSince(started)))")
}

/// Writes `count` devices into the SQLite database at `path`, each with an update
/// token of an activity of its own, or of `sharedActivity` when given.
func populate(path: String, app: String, count: Int, sharedActivity: String?) throws {
    let database = try SQLiteDatabase(path: path, migrations: IsletSchema.migrations)
    let now = Date().unixMilliseconds
    var random = SystemRandomNumberGenerator()
    let batch = 50_000
    for first in stride(from: 0, to: count, by: batch) {
        try database.write { connection in
            let device = try connection.prepare(
                "INSERT INTO devices (app_id, device_id, platform, environment, created_at, updated_at) VALUES (?, ?, 'ios', 'sandbox', ?, ?)")
            let activity = try connection.prepare(
                "INSERT INTO activities (app_id, activity_id, activity_type, origin, status, started_at) VALUES (?, ?, 'MatchAttributes', 'local', 'started', ?)")
            let instance = try connection.prepare(
                """
                INSERT INTO activity_instances (app_id, activity_id, device_id, status, update_token, environment,
                    token_registered_at, created_at, updated_at)
                VALUES (?, ?, ?, 'active', ?, 'sandbox', ?, ?, ?)
                """)
            if first == 0, let sharedActivity { try activity.run([app, sharedActivity, now]) }
            for index in first..<min(count, first + batch) {
                let id = "m\(index)"
                try device.run([app, id, now, now])
                if sharedActivity == nil { try activity.run([app, id, now]) }
                try instance.run([app, sharedActivity ?? id, id, PushToken.make(byteCount: 32, using: &random), now, now, now])
            }
        }
    }
    database.close()
}

/// `islet-bench populate-sends --database PATH --app A --sends N --targets T
/// [--failures F]`: N sends of one update each to T copies (N × T pushes), spread
/// evenly over the last 23 hours, each with F failed pushes of its own rows (by two
/// reasons), straight into a stopped server's database, as the delivery worker
/// leaves them: a send's counters, and a row only for a push that differed.
/// Prints `pushes=… sends=… seconds=…`.
func populateSends(_ arguments: [String]) throws {
    guard let path = value("--database", in: arguments), let app = value("--app", in: arguments),
        let sends = value("--sends", in: arguments).flatMap(Int.init),
        let targets = value("--targets", in: arguments).flatMap(Int.init)
    else {
        throw BenchHTTP.Failure(description: "populate-sends needs --database, --app, --sends and --targets")
    }
    let failures = value("--failures", in: arguments).flatMap(Int.init) ?? 0
    let started = Date()
    let database = try SQLiteDatabase(path: path, migrations: IsletSchema.migrations)
    let now = Date().unixMilliseconds
    let span: Int64 = 23 * 3_600_000
    let payload = Data(#"{"aps":{"event":"update","content-state":{"score":1},"timestamp":1}}"#.utf8)
    let batch = 20_000
    for first in stride(from: 0, to: sends, by: batch) {
        try database.write { connection in
            let send = try connection.prepare(
                """
                INSERT INTO sends (id, app_id, activity_id, event, topic, push_type, priority, payload, created_at, audience,
                    token_kind, state, total, sent, finished_at)
                VALUES (?, ?, ?, 'update', 'com.example.bench.push-type.liveactivity', 'liveactivity', 10, ?, ?, 'copies',
                    'live_activity_update', 'completed', ?, ?, ?)
                """)
            let push = try connection.prepare(
                """
                INSERT INTO pushes (send_id, app_id, activity_id, activity_type, device_id, token, token_kind, event,
                    status, environment, reason, apns_status, apns_id, attempts, next_attempt_at, created_at, updated_at)
                VALUES (?, ?, ?, 'MatchAttributes', ?, ?, 'live_activity_update', 'update', 'failed', 'sandbox', ?, ?, ?, 1, ?, ?, ?)
                """)
            for index in first..<min(sends, first + batch) {
                let at = now - span + span * Int64(index) / Int64(max(sends, 1))
                let id = Int64(index + 1)
                let activity = "match-\(index % 1_000)"
                try send.run([id, app, activity, payload, at, Int64(targets), Int64(targets - failures), at])
                for failure in 0..<failures {
                    let reason = failure % 2 == 0 ? "BadDeviceToken" : "Unregistered"
                    try push.run([
                        id, app, activity, "m\(failure)", String(repeating: "ab", count: 32), reason,
                        Int64(reason == "Unregistered" ? 410 : 400), UUID().uuidString, at, at, at,
                    ])
                }
            }
        }
    }
    database.close()
    emit("pushes=\(sends * targets)")
    emit("sends=\(sends)")
    emit("seconds=\(String(format: "%.1f", Date().timeIntervalSince(started)))")
}
