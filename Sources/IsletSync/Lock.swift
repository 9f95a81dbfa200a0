import Glibc

/// A value behind a mutual-exclusion lock, over `pthread_mutex_t`.
///
/// The project's one lock type. `Synchronization.Mutex` would do the same job, but on
/// Linux its lock and unlock live in the prebuilt runtime, where ThreadSanitizer
/// cannot see them, so every value it guards is reported as racing; a pthread mutex
/// is intercepted by the sanitizer, so what it still reports under this lock is a
/// real race.
///
/// `@unchecked Sendable`: `value` is read and written only between
/// `pthread_mutex_lock` and `pthread_mutex_unlock` of `mutex`, which is allocated
/// once and never moves.
public final class Lock<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock guarding `value`.
    public init(_ value: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// A value behind a lock, with a condition variable to wait on for it to change
/// (`pthread_mutex_t` and `pthread_cond_t`, both seen by ThreadSanitizer).
///
/// `@unchecked Sendable`: `value` is touched only while `mutex` is held, and the
/// mutex and condition are allocated once and never move.
public final class ConditionLock<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var value: Value

    /// A lock guarding `value`, its condition timed on the monotonic clock.
    public init(_ value: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        let rc = pthread_mutex_init(mutex, nil) | pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        precondition(rc == 0, "cannot create a lock: \(rc)")
        self.value = value
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` with the value under the lock, then wakes every waiter.
    public func withLockBroadcasting<Result>(_ body: (inout sending Value) -> sending Result) -> sending Result {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        return body(&value)
    }

    /// Runs `body` with the value under the lock, then wakes one waiter: for a queue
    /// whose waiters are all alike (worker threads), where waking every one for one
    /// job would only send the others back to sleep.
    public func withLockSignaling<Result>(_ body: (inout sending Value) -> sending Result) -> sending Result {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_signal(condition)
            pthread_mutex_unlock(mutex)
        }
        return body(&value)
    }

    /// Waits until `ready` holds for the value, or until `timeout` has passed when one
    /// is given, then runs `body` with the value under the lock (whether `ready` held
    /// or the time ran out; `body` can tell from the value).
    public func wait<Result>(
        until ready: (borrowing Value) -> Bool, timeout: Duration? = nil, then body: (inout sending Value) -> sending Result
    ) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if let timeout {
            var deadline = timespec()
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            let (seconds, attoseconds) = timeout.components
            let nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000)
            deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
            deadline.tv_nsec = nanoseconds % 1_000_000_000
            while !ready(value) {
                if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { break }
            }
        } else {
            while !ready(value) { pthread_cond_wait(condition, mutex) }
        }
        return body(&value)
    }
}
