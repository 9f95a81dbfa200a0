import Foundation
import IsletCore
import IsletService

/// The fields the send routes share, read into domain values.
enum SendFields {
    /// `alert: {title, body, sound?}`, by the `alert` field's schema.
    static func alert(_ object: ObjectReader) -> PushAlert? {
        guard let alert = object.object("alert") else { return nil }
        let title = alert.string("title")
        let body = alert.string("body")
        let sound = alert.string("sound")
        guard let title, let body else { return nil }
        return PushAlert(title: .literal(title), body: .literal(body), sound: sound)
    }

    /// `audience`: exactly one of `user_ids`, `device_ids`, `tags`.
    static func audience(_ object: ObjectReader) -> Audience? {
        guard let reader = object.object("audience"), let chosen = reader.chosen() else { return nil }
        guard let values = reader.strings(chosen) else { return nil }
        switch chosen {
        case "user_ids": return .userIDs(values)
        case "device_ids": return .deviceIDs(values)
        default: return .tags(values)
        }
    }

    /// A timeline object (`{entries, end_at?, renew?}`), by `RequestSchemas.timeline`.
    static func timeline(_ object: ObjectReader) -> TimelinePlan? {
        let readers = object.objects("entries")
        let endAt = object.date("end_at")
        let renew = object.bool("renew") ?? false
        var entries: [TimelineEntry] = []
        for reader in readers ?? [] {
            let at = reader.date("at")
            let state = reader.jsonObject("content_state")
            let alert = alert(reader)
            let stale = reader.date("stale_date")
            let relevance = reader.double("relevance_score")
            let priority = reader.integer("priority")
            guard let at else { continue }
            entries.append(TimelineEntry(
                at: at, contentState: state, alert: alert, staleDate: stale, relevanceScore: relevance, priority: priority))
        }
        guard let readers, entries.count == readers.count else { return nil }
        return TimelinePlan(entries: entries, endAt: endAt, renew: renew)
    }

    /// The JSON answer of a send that may have been scheduled.
    static func scheduledStatus<R>(_ answer: Replayable<Scheduling<R>>, immediate: (R) -> Int) -> Int {
        switch answer.result {
        case .scheduled: 202
        case .immediate(let result): immediate(result)
        }
    }
}
