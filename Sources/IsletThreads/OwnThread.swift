import Foundation

/// Runs `body` on a new thread named `name` and waits for it without holding a thread
/// of the concurrency pool meanwhile: for blocking work (joining a store's threads,
/// waiting for a child process) that would otherwise take one of the pool's few
/// threads (two on a 2-core machine) from every other task for as long as it lasts.
/// `stackSize` (bytes) replaces the system's default when given.
public func runOnOwnThread<T: Sendable>(
    named name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> T
) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread {
            nameCurrentThread(name)
            continuation.resume(returning: body())
        }
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }
}
