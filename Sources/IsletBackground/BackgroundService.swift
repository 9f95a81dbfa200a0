/// Work that no request starts: a loop (the delivery worker, the timekeeper, the
/// webhook dispatcher, the event feed) or something that only has to be closed in
/// its turn (the API server, the APNs client, the database).
///
/// Every one has the same shape: `prepare` does what must succeed before the
/// service counts as started (a port bound, work left by an earlier run put back);
/// `run` does the work until the task running it is cancelled, then stops, and
/// returns once it has stopped. A `ServiceRunner` starts services in a declared
/// order and stops them in reverse. A loop reads time from an injected clock and
/// paces itself with an injected `Sleeper`, so that its test moves a
/// `ManualWallClock` instead of sleeping.
public protocol BackgroundService: Sendable {
    /// What must succeed before `run` starts; a failure stops the start there.
    func prepare() throws
    /// Works until the running task is cancelled, then stops; returns once stopped.
    func run() async
    /// What a stop does, in this service's turn, when the service never started: it
    /// releases what the service holds from its creation.
    func stopUnstarted() async
}

extension BackgroundService {
    /// Nothing to prepare.
    public func prepare() throws {}
    /// Nothing to release: a service that never ran holds nothing.
    public func stopUnstarted() async {}
}

/// A service with no loop of its own that is closed in its turn: `run` waits for
/// the cancellation, then calls `close` (a client's connections, a database); a
/// stop that finds it never started calls `close` directly.
public struct ClosingService: BackgroundService {
    private let close: @Sendable () async -> Void

    /// A service whose stop is `close`.
    public init(close: @escaping @Sendable () async -> Void) {
        self.close = close
    }

    /// Waits for the cancellation, then closes.
    public func run() async {
        await waitForCancellation()
        await close()
    }

    /// Closes: what it closes was opened before the runner started anything.
    public func stopUnstarted() async {
        await close()
    }
}

/// Returns once the calling task is cancelled (at once when it already is).
public func waitForCancellation() async {
    await Alarm().wait()
}
