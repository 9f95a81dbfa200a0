public import Foundation
public import IsletCore
public import Storage

/// One send of an activity's timeline: what it said (the content state, read back
/// from its payload, and what changed from the one before it on the same platform)
/// and what it came to.
public struct SendHistoryEntry: Sendable, Hashable {
    /// The send and its counters, as stored.
    public let send: SendTimelineEntry
    /// The content state it carried (without Islet's own receipt stamp); `nil` for
    /// an end without one.
    public let contentState: JSONValue?
    /// The alert it carried, when it did.
    public let alert: JSONValue?
    /// `android` for FCM copies, `ios` for everything else (channels too).
    public let platform: String
    /// The paths (dotted; an array or a scalar counts whole) whose value differs
    /// from the previous send on the same platform that carried a content state;
    /// `nil` when there is none to compare with (the first) or this one carries none.
    public let changed: [String]?
}

/// A page of an activity's timeline, newest first.
public struct SendHistoryPage: Sendable, Hashable {
    /// Its sends.
    public let items: [SendHistoryEntry]
    /// The cursor of the next (older) page; `nil` on the last.
    public let nextCursor: Int64?
}

/// Reads what a send's payload carried, and what changed between two content
/// states. Pure.
public enum SendContentReading {
    /// The content state and alert of a payload sent over `tokenKind`'s transport:
    /// an APNs payload's `aps.content-state` and `aps.alert`, or an FCM message's
    /// `content_state` (JSON text). The receipt stamp (`islet: {send_id: <sendID>}`)
    /// is taken off: it is Islet's, and differs on every send.
    public static func read(
        _ payload: Data, tokenKind: PushTokenKind, sendID: Int64
    ) -> (contentState: JSONValue?, alert: JSONValue?) {
        guard let root = try? JSONValue(parsing: payload).objectValue else { return (nil, nil) }
        let state: JSONValue?
        let alert: JSONValue?
        if tokenKind == .fcm {
            state = root["content_state"]?.stringValue.flatMap { try? JSONValue(parsing: Data($0.utf8)) }
            alert = nil
        } else {
            let aps = root["aps"]?.objectValue
            state = aps?["content-state"]
            alert = aps?["alert"]
        }
        return (unstamped(state, sendID: sendID), alert)
    }

    /// `state` without the receipt stamp of send `sendID`.
    static func unstamped(_ state: JSONValue?, sendID: Int64) -> JSONValue? {
        guard case .object(var fields)? = state,
            fields[Receipts.key] == .object(["send_id": .string(Receipts.name(sendID))])
        else { return state }
        fields[Receipts.key] = nil
        return .object(fields)
    }

    /// The dotted paths at which `new` differs from `old`: members of objects on
    /// both sides are compared one by one (added and removed ones included); any
    /// other value, arrays too, counts whole. Sorted.
    public static func changes(from old: JSONValue, to new: JSONValue) -> [String] {
        var found: [String] = []
        collect(old, new, path: "", into: &found)
        return found.sorted()
    }

    private static func collect(_ old: JSONValue?, _ new: JSONValue?, path: String, into found: inout [String]) {
        if case .object(let before)? = old, case .object(let after)? = new {
            for key in Set(before.keys).union(after.keys) {
                collect(before[key], after[key], path: path.isEmpty ? key : path + "." + key, into: &found)
            }
        } else if old != new {
            found.append(path)
        }
    }
}

extension ActivityService {
    /// The most sends a page of an activity's timeline holds.
    public static let sendHistoryLimit = 1...200

    /// A page of the activity's sends, newest first, before the send `cursor`
    /// (`nil`: from the newest), at most `limit`; or `notFound`. Each names what
    /// changed from the send before it on its platform, looked for past the page
    /// when the page does not hold it.
    public func sendHistory(
        appID: String, activityID: String, cursor: Int64?, limit: Int
    ) async throws(ServiceError) -> SendHistoryPage {
        let limit = min(max(limit, Self.sendHistoryLimit.lowerBound), Self.sendHistoryLimit.upperBound)
        // A page and a few more: the sends just before it are those its oldest
        // entries compare with, on each platform.
        let lookahead = 8
        let (sends, earlier) = try await environment.read {
            (session: any Stores) -> ([SendTimelineEntry], [String: SendTimelineEntry]) in
            _ = try SendRules.activity(session, appID: appID, activityID: activityID)
            let sends = try session.sendTimeline(
                appID: appID, activityID: activityID, beforeSendID: cursor, limit: limit + lookahead)
            var earlier: [String: SendTimelineEntry] = [:]
            // A platform whose oldest send on the page has nothing of its platform
            // after it in what was read: read further back until one turns up (or
            // the history ends), a page at a time, at most a few pages.
            var oldest = sends.last?.sendID
            var missing = Set(sends.prefix(limit).filter { Self.carriesState($0) }.map(Self.platform))
            for send in sends.dropFirst(limit) where Self.carriesState(send) { missing.remove(Self.platform(send)) }
            var pages = 0
            while !missing.isEmpty, sends.count == limit + lookahead, let before = oldest, pages < 4 {
                let more = try session.sendTimeline(appID: appID, activityID: activityID, beforeSendID: before, limit: 100)
                for send in more where Self.carriesState(send) && missing.contains(Self.platform(send)) {
                    earlier[Self.platform(send)] = send
                    missing.remove(Self.platform(send))
                }
                guard more.count == 100 else { break }
                oldest = more.last?.sendID
                pages += 1
            }
            return (sends, earlier)
        }
        // Oldest first: each send's previous state on its platform is the last seen.
        var previous: [String: JSONValue] = [:]
        for send in earlier.values {
            previous[Self.platform(send)] = SendContentReading.read(send.payload, tokenKind: send.tokenKind, sendID: send.sendID).contentState
        }
        var entries: [SendHistoryEntry] = []
        for send in sends.reversed() {
            let platform = Self.platform(send)
            let (state, alert) = SendContentReading.read(send.payload, tokenKind: send.tokenKind, sendID: send.sendID)
            let changed = state.flatMap { new in previous[platform].map { SendContentReading.changes(from: $0, to: new) } }
            if let state { previous[platform] = state }
            entries.append(SendHistoryEntry(send: send, contentState: state, alert: alert, platform: platform, changed: changed))
        }
        let page = Array(entries.reversed().prefix(limit))
        return SendHistoryPage(items: page, nextCursor: sends.count > limit ? page.last?.send.sendID : nil)
    }

    /// `android` for a send to FCM copies, else `ios`.
    static func platform(_ send: SendTimelineEntry) -> String { send.tokenKind == .fcm ? "android" : "ios" }

    /// Whether the send carries a content state (an end may not).
    static func carriesState(_ send: SendTimelineEntry) -> Bool {
        SendContentReading.read(send.payload, tokenKind: send.tokenKind, sendID: send.sendID).contentState != nil
    }
}
