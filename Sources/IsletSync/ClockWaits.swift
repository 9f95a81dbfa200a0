/// How Islet's transports and loops measure elapsed time and wait on it: through a
/// `Clock` they were given (`ContinuousClock()` in production, a test's own clock in
/// tests), never through `ContinuousClock.now`, `Task.sleep` or the C library's
/// sleeps (a test scans the sources for those). These read an `any Clock<Duration>`
/// as a concrete clock would be read.
extension Clock where Duration == Swift.Duration {
    /// Starts measuring on this clock: the closure answers the time since this call.
    public func stopwatch() -> @Sendable () -> Duration {
        let start = now
        return { start.duration(to: self.now) }
    }

    /// A deadline `limit` from now on this clock: the closure answers whether it has
    /// passed.
    public func deadline(after limit: Duration) -> @Sendable () -> Bool {
        let end = now.advanced(by: limit)
        return { self.now >= end }
    }

    /// Checks `done` at once, then again every `interval` of this clock, until it
    /// holds, `limit` has passed or the task is cancelled. Answers whether it held.
    public func poll(every interval: Duration, upTo limit: Duration, until done: () -> Bool) async -> Bool {
        let passed = deadline(after: limit)
        while !done() {
            if passed() || Task.isCancelled { return false }
            try? await self.sleep(for: interval)
        }
        return true
    }
}
