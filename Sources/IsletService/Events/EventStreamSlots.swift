public import Foundation
import IsletSync

/// How many event streams each app may hold open at once on this node: a stream
/// holds a connection, a task and a buffer for as long as its client stays, so one
/// app's clients may not take them all. Past `maxPerApp`, a new stream is refused
/// (`limited`, with `Retry-After`) until one of the app's streams closes.
public final class EventStreamSlots: Sendable {
    /// Streams an app may hold open at once (`--max-event-streams-per-app`).
    public let maxPerApp: Int
    /// The default of `maxPerApp`.
    public static let defaultMaxPerApp = 100
    /// The seconds a refused client is told to wait before it tries again.
    static let retryAfterSeconds = 5
    private let open = Lock([String: Int]())
    /// When another node last said it holds a stream of each app open.
    private let elsewhere = Lock([String: Date]())
    /// How long another node's word that it holds a stream counts: it says it again
    /// every `announceInterval` while the stream stays open.
    public static let elsewhereLifetime: TimeInterval = 90
    /// How often a node holding a stream open says so to the others.
    public static let announceInterval: TimeInterval = 30

    /// Slots for `maxPerApp` streams per app.
    public init(maxPerApp: Int = EventStreamSlots.defaultMaxPerApp) {
        self.maxPerApp = maxPerApp
    }

    /// Takes a slot for a new stream of `appID`, held until the slot is released
    /// (or dropped); `limited` when the app's streams fill every slot.
    public func take(appID: String) throws(ServiceError) -> EventStreamSlot {
        let taken = open.withLock { open -> Int? in
            let count = open[appID, default: 0]
            guard count < maxPerApp else { return nil }
            open[appID] = count + 1
            return count + 1
        }
        guard taken != nil else {
            throw ServiceError(
                .limited,
                "App \(appID) has \(maxPerApp) event streams open, the most an app may have (--max-event-streams-per-app); "
                    + "close one, or try again later.",
                reason: "event_stream_limit", retryAfter: Self.retryAfterSeconds)
        }
        return EventStreamSlot { [self] in release(appID: appID) }
    }

    /// Records that another node holds a stream of `appID` open, as of `now`.
    public func openElsewhere(appID: String, now: Date) {
        elsewhere.withLock { $0[appID] = now }
    }

    /// Whether a stream of `appID` is open here, or was said to be open on another
    /// node within `elsewhereLifetime` of `now`: then each push sent for the app
    /// is an event.
    public func wanted(appID: String, now: Date) -> Bool {
        if openStreams(appID: appID) > 0 { return true }
        return elsewhere.withLock { seen in
            guard let at = seen[appID] else { return false }
            if now.timeIntervalSince(at) > Self.elsewhereLifetime {
                seen[appID] = nil
                return false
            }
            return true
        }
    }

    /// The streams of `appID` open now.
    public func openStreams(appID: String) -> Int {
        open.withLock { $0[appID, default: 0] }
    }

    private func release(appID: String) {
        open.withLock { open in
            let count = open[appID, default: 0] - 1
            open[appID] = count > 0 ? count : nil
        }
    }
}

/// One open stream's slot: given back once, by `release()` or when it is dropped
/// (a response never sent, such as one to a HEAD request, still frees it).
public final class EventStreamSlot: Sendable {
    private let giveBack: Lock<(@Sendable () -> Void)?>

    init(_ giveBack: @escaping @Sendable () -> Void) {
        self.giveBack = Lock(giveBack)
    }

    /// Gives the slot back (only the first call counts).
    public func release() {
        let pending = giveBack.withLock { value -> (@Sendable () -> Void)? in
            defer { value = nil }
            return value
        }
        pending?()
    }

    deinit { release() }
}
