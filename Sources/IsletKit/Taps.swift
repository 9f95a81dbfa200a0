public import Foundation

/// The widget's link to the app, carrying the activity it belongs to, so that a tap
/// on the lock screen or the Dynamic Island is counted at the server.
public enum IsletTapURL {
    static let activityItem = "islet_activity_id"
    static let pushItem = "islet_apns_id"

    /// `url` (the app's own deep link) with the activity's id, and the push's
    /// `apns-id` when the widget knows it, added as query items. Use it in the
    /// widget's `widgetURL` or `Link`.
    public static func url(_ url: URL, activityID: String, apnsID: String? = nil) -> URL {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        var items = (parts.queryItems ?? []).filter { $0.name != activityItem && $0.name != pushItem }
        items.append(URLQueryItem(name: activityItem, value: activityID))
        if let apnsID { items.append(URLQueryItem(name: pushItem, value: apnsID)) }
        parts.queryItems = items
        return parts.url ?? url
    }

    /// The tap a URL carries, stamped `tappedAt`, and the app's own URL without
    /// Islet's items.
    static func parse(_ url: URL, at tappedAt: Date = IsletSystemClock.now()) -> (tap: PendingTap?, appURL: URL) {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let items = parts.queryItems,
            let activityID = items.first(where: { $0.name == activityItem })?.value, !activityID.isEmpty
        else { return (nil, url) }
        let apnsID = items.first { $0.name == pushItem }?.value
        let rest = items.filter { $0.name != activityItem && $0.name != pushItem }
        parts.queryItems = rest.isEmpty ? nil : rest
        return (PendingTap(activityID: activityID, apnsID: apnsID, tappedAt: tappedAt), parts.url ?? url)
    }
}

struct PendingTap: Sendable, Hashable {
    var activityID: String
    var apnsID: String?
    var tappedAt: Date
}

/// Taps heard before IsletKit is configured (a cold launch from a tap runs the app's
/// URL handler first): held here in memory until an `Islet` takes them.
final class TapInbox: @unchecked Sendable {
    // @unchecked: every field is read and written under `lock` only.
    static let shared = TapInbox()
    private let lock = NSLock()
    private var taps: [PendingTap] = []
    private var listener: (@Sendable (PendingTap) -> Void)?
    private var listenerID: UUID?

    func put(_ tap: PendingTap) {
        lock.lock()
        let listener = self.listener
        if listener == nil { taps.append(tap) }
        lock.unlock()
        listener?(tap)
    }

    /// Hands over the taps held, and each later one to `listener` (the newest
    /// `Islet` to start), until `release(id)`.
    func take(id: UUID, listener: @escaping @Sendable (PendingTap) -> Void) -> [PendingTap] {
        lock.lock()
        defer { lock.unlock() }
        self.listener = listener
        listenerID = id
        let held = taps
        taps = []
        return held
    }

    func release(_ id: UUID) {
        lock.lock()
        if listenerID == id {
            listener = nil
            listenerID = nil
        }
        lock.unlock()
    }
}

/// Sends each event to every reader of `events`.
final class EventHub: @unchecked Sendable {
    // @unchecked: `readers` is read and written under `lock` only.
    private let lock = NSLock()
    private var readers: [UUID: AsyncStream<IsletEvent>.Continuation] = [:]

    func stream() -> AsyncStream<IsletEvent> {
        let (stream, continuation) = AsyncStream<IsletEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        lock.lock()
        readers[id] = continuation
        lock.unlock()
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.lock.lock()
            self.readers[id] = nil
            self.lock.unlock()
        }
        return stream
    }

    func send(_ event: IsletEvent) {
        lock.lock()
        let all = Array(readers.values)
        lock.unlock()
        for reader in all { reader.yield(event) }
    }

    func finish() {
        lock.lock()
        let all = Array(readers.values)
        readers = [:]
        lock.unlock()
        for reader in all { reader.finish() }
    }
}
