import Foundation

/// Runs `body` on a new thread named `name` and waits for it without holding a thread
/// of the concurrency pool meanwhile: for blocking work (joining a store's threads,
/// waiting for a child process) that would otherwise take one of the pool's few
/// threads (two on a 2-core machine) from every other task for as long as it lasts.
public func runOnOwnThread<T: Sendable>(named name: String, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread {
            nameCurrentThread(name)
            continuation.resume(returning: body())
        }
        thread.start()
    }
}
