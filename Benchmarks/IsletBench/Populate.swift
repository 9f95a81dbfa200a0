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
