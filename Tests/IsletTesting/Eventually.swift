import Foundation
/// Waits until `condition` holds, looking again every few milliseconds, for up to
/// `deadline` (generous: a shared machine can be slow); answers whether it held. For
/// what the code under test reaches in its own time, instead of a fixed sleep.
public func eventually(
    within deadline: Duration = .seconds(30), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + TestTime.scaled(deadline)
    while clock.now < end {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try await condition()
}

/// How much longer than usual the tests' deadlines are: `ISLET_TEST_TIME_SCALE`
/// (a whole number, 1 when unset). `make test-sanitize` sets it, since a suite under
/// ThreadSanitizer runs several times slower while hundreds of tests share two
/// cores: a deadline there is still a deadline, never a sleep.
public enum TestTime {
    public static let scale: Int64 = {
        guard let text = ProcessInfo.processInfo.environment["ISLET_TEST_TIME_SCALE"], let value = Int64(text), value >= 1
        else { return 1 }
        return value
    }()

    /// `duration`, scaled.
    public static func scaled(_ duration: Duration) -> Duration { duration * scale }
}
