import IsletSync
internal import CLinux
import Foundation
import Glibc
import IsletThreads
import Synchronization

/// Something the event loop tells when its file descriptor is ready.
protocol EventHandler: AnyObject {
    /// Called on the loop thread with the `epoll` event bits.
    func handleEvents(_ events: UInt32)
}

/// Monotonic time in nanoseconds.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

extension Duration {
    /// The duration in whole nanoseconds (negative counts as zero), for comparisons
    /// with `monotonicNanoseconds()`.
    var nanoseconds: UInt64 {
        UInt64(max(0, components.seconds)) * 1_000_000_000 + UInt64(max(0, components.attoseconds / 1_000_000_000))
    }

    /// The duration in seconds.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// One thread running an edge-triggered `epoll` loop, with timers and a queue of work
/// posted from other threads.
///
/// `@unchecked Sendable`: the handler table, the timers and everything handlers touch
/// are used only on the loop's own thread; other threads reach the loop only through
/// `execute`, whose queue sits behind a `Lock`, and `stop`.
final class EventLoop: @unchecked Sendable {
    private let epollFD: Int32
    private let wakeFD: Int32
    private var handlers: [Int32: any EventHandler] = [:]
    private let inbox = Lock<(tasks: [@Sendable () -> Void], wakePending: Bool, stopping: Bool)>(([], false, false))
    private var timers = TimerHeap()
    private var nextTimerID: UInt64 = 1
    private var cancelledTimers = Set<UInt64>()
    private var deferred: [() -> Void] = []
    /// The client whose completion runs now on this thread, if any. Loop thread only.
    var answering: AnyObject?
    /// The loop thread's `pthread_self()`, 0 until it runs; atomic because any
    /// thread may ask `inLoop`.
    private let threadID = Atomic<UInt>(0)
    /// Whether the loop's thread has finished, for `stop` to wait on.
    private let finished = ConditionLock(false)
    let name: String

    /// OpenSSL writes to sockets with plain `write`, which raises SIGPIPE when the
    /// peer has gone; a server must get EPIPE instead. Done once per process.
    private static let ignoreSIGPIPE: Void = {
        signal(SIGPIPE, SIG_IGN)
    }()

    init(name: String) {
        EventLoop.ignoreSIGPIPE
        self.name = name
        epollFD = islet_epoll_create()
        wakeFD = islet_eventfd_create()
        precondition(epollFD >= 0 && wakeFD >= 0, "cannot create epoll or eventfd: \(errno)")
        islet_epoll_control(epollFD, 0, wakeFD, ISLET_EPOLLIN)
        let thread = Thread { [self] in
            // Named from inside: on Linux a name given before `start` never reaches
            // the system (`top -H`, `perf`), which takes at most 15 bytes.
            nameCurrentThread(name)
            run()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    deinit {
        close(epollFD)
        close(wakeFD)
    }

    /// Whether the caller is on the loop thread.
    var inLoop: Bool {
        let loopThread = threadID.load(ordering: .acquiring)
        return loopThread != 0 && pthread_equal(loopThread, pthread_self()) != 0
    }

    /// Runs `task` on the loop thread, soon. Safe from any thread.
    func execute(_ task: @escaping @Sendable () -> Void) {
        let wake = inbox.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.tasks.append(task)
            if state.wakePending { return false }
            state.wakePending = true
            return true
        }
        if wake {
            var one: UInt64 = 1
            _ = write(wakeFD, &one, 8)
        }
    }

    /// Watches `fd` for input and output (edge-triggered). Loop thread only.
    func register(_ fd: Int32, _ handler: any EventHandler) {
        handlers[fd] = handler
        islet_epoll_control(epollFD, 0, fd, ISLET_EPOLLIN | ISLET_EPOLLOUT | ISLET_EPOLLRDHUP | ISLET_EPOLLET)
    }

    /// Watches a listening socket for input only (level-triggered). Loop thread only.
    func registerListener(_ fd: Int32, _ handler: any EventHandler) {
        handlers[fd] = handler
        islet_epoll_control(epollFD, 0, fd, ISLET_EPOLLIN)
    }

    /// Stops watching `fd` (the caller closes it). Loop thread only.
    func unregister(_ fd: Int32) {
        guard handlers.removeValue(forKey: fd) != nil else { return }
        islet_epoll_control(epollFD, 2, fd, 0)
    }

    /// Calls `body` on the loop thread after `delay`; answers an id for `cancelTimer`.
    /// Loop thread only.
    @discardableResult
    func schedule(after delay: Duration, _ body: @escaping () -> Void) -> UInt64 {
        let id = nextTimerID
        nextTimerID += 1
        timers.push(TimerEntry(deadline: monotonicNanoseconds() + delay.nanoseconds, id: id, body: body))
        return id
    }

    /// Runs `body` on the loop thread once the current round of events has been
    /// handled, outside any library callback. Loop thread only.
    func afterEvents(_ body: @escaping () -> Void) {
        deferred.append(body)
    }

    /// Cancels a timer that has not fired. Loop thread only.
    func cancelTimer(_ id: UInt64) {
        cancelledTimers.insert(id)
    }

    /// Ends the loop after the work already posted, and waits for its thread (unless
    /// called on that thread, as when the loop's owner is released by one of its own
    /// callbacks: then the loop ends when the callback returns).
    func stop() {
        let first = inbox.withLock { state -> Bool in
            if state.stopping { return false }
            state.stopping = true
            return true
        }
        guard first else { return }
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
        if !inLoop { finished.wait(until: { $0 }) { _ in } }
    }

    private func run() {
        threadID.store(pthread_self(), ordering: .releasing)
        var fds = [Int32](repeating: 0, count: 256)
        var events = [UInt32](repeating: 0, count: 256)
        while true {
            let timeout = nextTimeoutMilliseconds()
            let count = islet_epoll_wait(epollFD, &fds, &events, Int32(fds.count), timeout)
            if count < 0 && errno != EINTR { break }
            for index in 0..<max(0, Int(count)) {
                let fd = fds[index]
                if fd == wakeFD {
                    var value: UInt64 = 0
                    _ = read(wakeFD, &value, 8)
                    continue
                }
                handlers[fd]?.handleEvents(events[index])
            }
            let (tasks, stopping) = inbox.withLock { state in
                let tasks = state.tasks
                state.tasks = []
                state.wakePending = false
                return (tasks, state.stopping)
            }
            for task in tasks { task() }
            runDueTimers()
            while !deferred.isEmpty {
                let batch = deferred
                deferred.removeAll(keepingCapacity: true)
                for body in batch { body() }
            }
            if stopping { break }
        }
        handlers.removeAll()
        timers = TimerHeap()
        finished.withLockBroadcasting { $0 = true }
    }

    private func nextTimeoutMilliseconds() -> Int32 {
        if !deferred.isEmpty || inbox.withLock({ !$0.tasks.isEmpty }) { return 0 }
        while let first = timers.first, cancelledTimers.contains(first.id) {
            cancelledTimers.remove(first.id)
            _ = timers.pop()
        }
        guard let first = timers.first else { return 1_000 }
        let now = monotonicNanoseconds()
        if first.deadline <= now { return 0 }
        return Int32(min(1_000, (first.deadline - now + 999_999) / 1_000_000))
    }

    private func runDueTimers() {
        let now = monotonicNanoseconds()
        while let first = timers.first, first.deadline <= now {
            _ = timers.pop()
            if cancelledTimers.remove(first.id) != nil { continue }
            first.body()
        }
    }
}

private struct TimerEntry {
    let deadline: UInt64
    let id: UInt64
    let body: () -> Void
}

/// A binary min-heap of timers by deadline.
private struct TimerHeap {
    private var items: [TimerEntry] = []

    var first: TimerEntry? { items.first }

    mutating func push(_ item: TimerEntry) {
        items.append(item)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].deadline < items[parent].deadline else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> TimerEntry? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var parent = 0
        while true {
            let left = parent * 2 + 1
            let right = left + 1
            var smallest = parent
            if left < items.count && items[left].deadline < items[smallest].deadline { smallest = left }
            if right < items.count && items[right].deadline < items[smallest].deadline { smallest = right }
            if smallest == parent { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}
