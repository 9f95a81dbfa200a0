import IsletSync
import Delivery
import Foundation
import IsletCore
import IsletLog
import Storage

/// Ends activities whose `end_at` has come, as the end route would (the last
/// content state, cause `scheduled`). It looks every quarter second, reading time
/// from the application's clock, so that a test can move the clock instead of
/// waiting.
final class ScheduledEnds: Sendable {
    private let context: ServerContext
    private let task = Lock<Task<Void, Never>?>(nil)

    init(context: ServerContext) {
        self.context = context
    }

    func start() {
        let context = self.context
        task.withLock { task in
            guard task == nil else { return }
            task = Task {
                while !Task.isCancelled {
                    await ScheduledEnds.endDue(context)
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
        }
    }

    func stop() async {
        let running = task.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        running?.cancel()
        await running?.value
    }

    /// Ends every activity due now; answers how many were ended.
    @discardableResult
    static func endDue(_ context: ServerContext) async -> Int {
        let now = context.clock.now()
        do {
            // Most ticks find nothing: look with a read before taking the writer.
            guard try await !context.store.read({ try $0.dueScheduledEnds(now: now, limit: 1) }).isEmpty else { return 0 }
            let ended = try await context.store.write { session -> Int in
                var ended = 0
                for (appID, activityID) in try session.dueScheduledEnds(now: now, limit: 500) {
                    guard let app = try session.app(id: appID) else { continue }
                    do {
                        _ = try ActivityRoutes.endTransaction(
                            session: session, app: app, activityID: activityID, contentState: nil, dismissalDate: nil,
                            cause: .scheduled, lifecycle: context.lifecycle, now: now)
                    } catch {
                        // A payload that can no longer be built still ends the
                        // activity, so that it is not tried again every tick.
                        try session.endActivity(
                            appID: appID, activityID: activityID, cause: .scheduled, contentState: nil, timestamp: nil, at: now)
                        context.logger.warning(
                            "scheduled end sent nothing", ("app", .string(appID)), ("error", .string("\(error)")))
                    }
                    ended += 1
                }
                return ended
            }
            if ended > 0 {
                context.delivery.wake()
                context.logger.info("activities ended at their end time", ("count", .int(ended)))
            }
            return ended
        } catch {
            context.logger.error("scheduled ends failed", ("error", .string("\(error)")))
            return 0
        }
    }
}
