/// Waits until `condition` holds, looking again every few milliseconds, for up to
/// `deadline` (generous: a shared machine can be slow); answers whether it held. For
/// what the code under test reaches in its own time, instead of a fixed sleep.
public func eventually(
    within deadline: Duration = .seconds(30), _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + deadline
    while clock.now < end {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try await condition()
}
