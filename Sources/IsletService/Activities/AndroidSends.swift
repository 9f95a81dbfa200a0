import Foundation
import IsletCore
import Storage

/// What an activity's Android copies are sent: the same start, update or end as
/// its iOS copies, as an FCM data message (`AndroidDataPush`), stored once for all
/// of them and queued as pushes of token kind `fcm`.
enum AndroidSends {
    /// The stored content of `push`: its data (a JSON object of strings) as the
    /// payload, `high` as priority 10 (else 5), its collapse key, and `expiration`
    /// (the iOS send's, so that both platforms stop trying at the same time).
    /// `timestamp` is the iOS payload's, so that both platforms order the send alike.
    /// A data message over FCM's limit is `invalid`, naming the field.
    static func content(
        _ push: AndroidDataPush, event: PushEvent, timestamp: Int64?, expiration: Int64?, now: Date
    ) throws(ServiceError) -> SendContent {
        let built: AndroidDataPush.Built
        do {
            // The builder takes the larger of now and the last timestamp + 1: given
            // the iOS timestamp less one, it uses that timestamp.
            built = try push.build(now: now, lastTimestamp: timestamp.map { $0 - 1 })
        } catch {
            throw SendRules.payloadError(error)
        }
        let data = JSONValue.object(built.data.mapValues { .string($0) })
        return SendContent(
            event: event, topic: "fcm", pushType: .liveactivity,
            priority: built.priority == "high" ? .immediate : .powerConsidered, expiration: expiration,
            collapseID: built.collapseKey, payload: Data(data.jsonText.utf8))
    }
}
