import Foundation
import HTTPServer
import IsletCore
import IsletSync
import IsletService
import Storage

/// Writes an app's events as Server-Sent Events: each as `id:` / `event:` / `data:`
/// lines, a comment every `keepAlive` while nothing happens (proxies close idle
/// connections), in the order an `EventCursor` reads them: the catch-up after
/// `Last-Event-ID`, then the live events, without a gap or a repeat. Each stream
/// holds one of its app's `slots` while it is open.
struct EventStreaming: Sendable {
    let feed: EventFeed
    let events: EventService
    let keepAlive: Duration
    let slots: EventStreamSlots
    /// The clock the announcements are timed and a full buffer is waited out on.
    var clock: any Clock<Duration> = ContinuousClock()

    /// The stream of `appID`'s events after `after`; without it (no `Last-Event-ID`
    /// nor `?after=`), from now on. `limited` when the app has as many streams open
    /// as it may.
    func response(appID: String, after: Int64?, patterns: [EventPattern]) async throws -> HTTPResponse {
        let slot = try slots.take(appID: appID)
        let start = after ?? feed.cursor
        let feed = self.feed
        let events = self.events
        let keepAlive = self.keepAlive
        let clock = self.clock
        return HTTPResponse.stream(
            headers: [
                "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            ]
        ) { writer in
            defer { slot.release() }
            // The other nodes learn that the app's pushes are wanted as events, and
            // again while the stream stays open.
            await events.announceStream(appID: appID)
            var sinceAnnounced = clock.stopwatch()
            var cursor = EventCursor(feed: feed, events: events, appID: appID, after: start, patterns: patterns)
            // The first bytes: a retry hint, so that the headers and something of the
            // body reach the client at once.
            let opening = "retry: 2000\n: stream of \(appID) after \(EventRecord.id(cursor.position))\n\n"
            guard writer.write(Data(opening.utf8)) else { return }
            while !writer.isClosed {
                if sinceAnnounced() >= .seconds(EventStreamSlots.announceInterval) {
                    await events.announceStream(appID: appID)
                    sinceAnnounced = clock.stopwatch()
                }
                guard let batch = try? await cursor.next() else { return }
                if !batch.isEmpty {
                    // In pieces, each written once the connection has taken most of
                    // the one before: a stream with thousands of events to send
                    // keeps within its buffer, at the pace of its client.
                    var text = ""
                    for event in batch {
                        text += Self.frame(event)
                        if text.utf8.count >= Self.piece {
                            guard await Self.send(text, to: writer, clock: clock) else { return }
                            text = ""
                        }
                    }
                    if !text.isEmpty { guard await Self.send(text, to: writer, clock: clock) else { return } }
                } else {
                    // News for this stream (it answers at once when some came since
                    // the read), the client leaving (or the server stopping), or the
                    // keep-alive's time, whichever comes first.
                    let waiting = cursor
                    let news = await withTaskGroup(of: Bool.self) { group in
                        group.addTask { await waiting.waitForNews(timeout: keepAlive) }
                        group.addTask {
                            _ = await writer.closed(within: keepAlive)
                            return false
                        }
                        let first = await group.next() ?? false
                        group.cancelAll()
                        return first
                    }
                    if writer.isClosed { return }
                    if !news {
                        guard writer.write(Data(": keep-alive\n\n".utf8)) else { return }
                    }
                }
            }
        }
    }

    /// Bytes per write of a batch.
    static let piece = 64 * 1024

    /// Writes `text` once the writer's queue is below two pieces; false once the
    /// client is gone.
    static func send(
        _ text: String, to writer: HTTPBodyWriter, clock: any Clock<Duration>
    ) async -> Bool {
        while writer.queuedBytes > 2 * piece {
            if writer.isClosed { return false }
            try? await clock.sleep(for: .milliseconds(2))
        }
        return writer.write(Data(text.utf8))
    }

    /// One event as a Server-Sent Events message.
    static func frame(_ event: EventRecord) -> String {
        "id: \(event.id)\nevent: \(event.type)\ndata: \(event.jsonText)\n\n"
    }
}
