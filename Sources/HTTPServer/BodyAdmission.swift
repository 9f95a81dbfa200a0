import Foundation
import Glibc
import IsletSync

/// What is known of a request before a byte of its body is read: enough to decide
/// whether the body is worth reading at all.
public struct HTTPRequestHead: Sendable {
    /// The method, as sent.
    public let method: String
    /// The path, percent-decoded, without the query.
    public let path: String
    /// The header fields.
    public let headers: HTTPHeaders
    /// The peer's IP address, when known.
    public let remoteHost: String?
    /// The declared body length, nil for a chunked body.
    public let contentLength: Int?

    /// Creates a head.
    public init(method: String, path: String, headers: HTTPHeaders, remoteHost: String?, contentLength: Int?) {
        self.method = method
        self.path = path
        self.headers = headers
        self.remoteHost = remoteHost
        self.contentLength = contentLength
    }
}

/// Whether a request's body is read, decided from its head.
public enum HTTPAdmission: Sendable {
    /// Read the body, its bytes counted against the server's buffered bytes and, when
    /// given, against `budget`'s (an app's, say).
    case admit(budget: String?)
    /// Answer at once, without reading the body; the connection then closes.
    case refuse(HTTPResponse)
    /// The decision takes a wait (a database read): the connection is set aside,
    /// reading nothing, until `decide` answers.
    case check(@Sendable () async -> HTTPAdmission)
}

/// Decides from a request's head whether its body is read. Called on the server's
/// event-loop thread: it must not wait, and answers `.check` when it would.
public typealias HTTPAdmissionPolicy = @Sendable (HTTPRequestHead) -> HTTPAdmission

/// Answers the server gives by itself, before or instead of a handler.
public enum HTTPServerRefusal: Sendable, Equatable {
    /// The body is larger than `limit` bytes (413).
    case bodyTooLarge(limit: Int)
    /// The body did not arrive within `seconds` of the head (408).
    case bodyTimeout(seconds: Double)
    /// Too many bytes of bodies are held now, across the server or for the request's
    /// budget (503, try again after `retryAfter` seconds).
    case bodiesBuffered(retryAfter: Int)
    /// The request is malformed (400): `detail` says how.
    case badRequest(detail: String)
}

/// The bytes of request bodies held at once: across the server, and per budget
/// (an app). A body is counted from the moment it is admitted (its declared length
/// at once, a chunked one as it arrives) until its request is answered and done.
final class BodyBudget: Sendable {
    let total: Int
    let perBudget: Int
    private let state = Lock(State())

    private struct State {
        var held = 0
        var byBudget: [String: Int] = [:]
    }

    init(total: Int, perBudget: Int) {
        self.total = total
        self.perBudget = perBudget
    }

    /// Counts `bytes` more for `budget`, or answers false (and counts nothing) when
    /// either limit would be passed.
    func reserve(_ bytes: Int, budget: String?) -> Bool {
        guard bytes > 0 else { return true }
        return state.withLock { s in
            guard s.held + bytes <= total else { return false }
            if let budget {
                let current = s.byBudget[budget] ?? 0
                guard current + bytes <= perBudget else { return false }
                s.byBudget[budget] = current + bytes
            }
            s.held += bytes
            return true
        }
    }

    /// Stops counting `bytes` of `budget`.
    func release(_ bytes: Int, budget: String?) {
        guard bytes > 0 else { return }
        state.withLock { s in
            s.held -= bytes
            if let budget {
                let left = (s.byBudget[budget] ?? 0) - bytes
                s.byBudget[budget] = left > 0 ? left : nil
            }
        }
    }

    /// Bytes counted now, in all and for `budget`.
    func held(budget: String? = nil) -> Int {
        state.withLock { s in budget.map { s.byBudget[$0] ?? 0 } ?? s.held }
    }
}

/// A request whose body is being read, watched for its deadline. The sweep and
/// the daemon thread decide under `state`'s lock who answers: the handler's answer
/// (the body arrived: `bodyDone`), or the sweep's 408 (`fired`); and the completion
/// callback marks it gone (`alive` false) before libmicrohttpd closes the socket,
/// so that a late sweep never writes to a descriptor that is another's by then.
final class BodyWatch: Sendable {
    struct State {
        var alive = true
        var bodyDone = false
        var fired = false
    }

    let state = Lock(State())
    let fd: Int32
    /// Whether its deadline has passed, on the server's clock.
    let passed: @Sendable () -> Bool

    init(fd: Int32, passed: @escaping @Sendable () -> Bool) {
        self.fd = fd
        self.passed = passed
    }
}

/// The bodies being read, each with its deadline; a body not whole by then is
/// answered 408 and its connection shut down. One task per server sweeps them a
/// few times per timeout (at most every second), and only while there are any.
///
/// libmicrohttpd has no call for this (an answer can be queued only once the body
/// is whole, and its idle timeout closes without one), so the answer is written to
/// the socket directly: safe because nothing else writes while a body is read, and
/// decided under the watch's lock against the handler's answer and the
/// connection's end (see `BodyWatch`). The socket is shut down, never closed:
/// libmicrohttpd owns it, and cleans up once it sees the end.
final class BodyDeadlines: Sendable {
    private struct State {
        var watches: [ObjectIdentifier: BodyWatch] = [:]
        /// Whether a sweeping task runs (it ends once nothing is watched).
        var sweeping = false
        var stopped = false
    }

    private let state = Lock(State())
    private let interval: Duration
    private let answer: @Sendable () -> Data
    /// Where the sweeping task runs.
    private let tasks: TaskThreads
    /// The clock the sweeps wait on.
    private let clock: any Clock<Duration>

    /// Sweeps for bodies later than `timeout`, answering each with `answer`'s bytes,
    /// in a task on `tasks`, every few turns of `clock`.
    init(timeout: Duration, tasks: TaskThreads, clock: any Clock<Duration>, answer: @escaping @Sendable () -> Data) {
        self.interval = min(.seconds(1), max(.milliseconds(20), timeout / 4))
        self.tasks = tasks
        self.clock = clock
        self.answer = answer
    }

    func add(_ watch: BodyWatch) {
        let start = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            s.watches[ObjectIdentifier(watch)] = watch
            defer { s.sweeping = true }
            return !s.sweeping
        }
        guard start else { return }
        let interval = interval
        let clock = clock
        Task(executorPreference: tasks) { [weak self] in
            while true {
                try? await clock.sleep(for: interval)
                guard let self, self.sweep() else { return }
            }
        }
    }

    func remove(_ watch: BodyWatch) {
        state.withLock { _ = $0.watches.removeValue(forKey: ObjectIdentifier(watch)) }
    }

    /// Stops sweeping, for good (the sweeping task ends at its next turn).
    func stop() {
        state.withLock { s in
            s.stopped = true
            s.watches = [:]
        }
    }

    /// Answers the bodies past their deadline; answers whether to sweep again
    /// (false once nothing is watched, or after `stop`).
    private func sweep() -> Bool {
        let (late, again) = state.withLock { s -> ([BodyWatch], Bool) in
            let late = s.watches.values.filter { $0.passed() }
            for watch in late { s.watches.removeValue(forKey: ObjectIdentifier(watch)) }
            let again = !s.stopped && !s.watches.isEmpty
            if !again { s.sweeping = false }
            return (late, again)
        }
        guard !late.isEmpty else { return again }
        let bytes = answer()
        for watch in late {
            watch.state.withLock { s in
                guard s.alive, !s.bodyDone, !s.fired else { return }
                s.fired = true
                bytes.withUnsafeBytes { raw in
                    _ = send(watch.fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                }
                _ = shutdown(watch.fd, Int32(SHUT_RDWR))
            }
        }
        return again
    }
}
