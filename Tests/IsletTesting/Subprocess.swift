import Foundation
import CLinux
import IsletSync

/// A child process, started with `posix_spawn` and reaped with `waitpid` here.
///
/// Not Foundation's `Process`: on this toolchain its `run()` counts the open
/// descriptors by copying every `/proc/self/fd` entry as a whole `struct dirent`
/// (`findMaximumOpenFromProcSelfFD`), past the end of the last entry, and so past
/// the end of `opendir`'s buffer. AddressSanitizer reports that read; when the
/// buffer ends at the end of a mapped page the read faults, and the test
/// process died of SIGSEGV in `Process.run` (a test process holds hundreds of
/// descriptors, which makes that likelier). Its exit notices also depend on SIGCHLD
/// reaching a dispatch source, which under ThreadSanitizer was seen never to come.
///
/// The child starts with every signal unblocked and at its default action, standard
/// input empty, and no descriptor of ours but the three it is given.
public final class Subprocess: Sendable {
    /// Where one of the child's output streams goes.
    public enum Output: Sendable {
        /// To `/dev/null`.
        case discard
        /// Into memory, read as it comes (``standardOutput``, ``standardError``).
        case collect
        /// Appended to the file at this path (created if missing).
        case file(String)
    }

    /// How a child ended.
    public enum Termination: Sendable, Equatable, CustomStringConvertible {
        /// It exited with this status.
        case exit(Int32)
        /// A signal ended it.
        case signal(Int32)

        public var description: String {
            switch self {
            case .exit(let status): "exit status \(status)"
            case .signal(let number): "signal \(number)"
            }
        }
    }

    /// The child's process id.
    public let processIdentifier: Int32
    private let executable: String
    private let ended = Lock<Termination?>(nil)
    private let outputs: [CollectedOutput?]

    /// Starts `executable` with `arguments`. The child's environment is ours with
    /// `environment` over it, or exactly `environment` when `inheritEnvironment` is
    /// false; `directory` is its working folder (ours when `nil`).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], inheritEnvironment: Bool = true,
        directory: String? = nil, standardOutput: Output = .discard, standardError: Output = .discard
    ) throws {
        var variables = inheritEnvironment ? ProcessInfo.processInfo.environment : [:]
        variables.merge(environment) { $1 }
        var opened: [Int32] = []
        defer { for fd in opened { close(fd) } }
        func open(_ path: String, _ flags: Int32) throws -> Int32 {
            let fd = Glibc.open(path, flags | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw CommandError(message: "cannot open \(path): \(String(cString: strerror(errno)))") }
            opened.append(fd)
            return fd
        }
        var collectors: [CollectedOutput?] = []
        var readEnds: [Int32] = []
        func descriptor(_ output: Output) throws -> Int32 {
            switch output {
            case .discard:
                collectors.append(nil)
                return try open("/dev/null", O_WRONLY)
            case .file(let path):
                collectors.append(nil)
                return try open(path, O_WRONLY | O_CREAT | O_APPEND)
            case .collect:
                var ends: [Int32] = [-1, -1]
                guard islet_pipe_cloexec(&ends) == 0 else {
                    throw CommandError(message: "pipe: \(String(cString: strerror(errno)))")
                }
                opened.append(ends[1])
                readEnds.append(ends[0])
                collectors.append(CollectedOutput())
                return ends[1]
            }
        }
        do {
            let input = try open("/dev/null", O_RDONLY)
            let out = try descriptor(standardOutput)
            let err = try descriptor(standardError)
            processIdentifier = try spawn(
                executable, arguments, environment: variables, directory: directory, descriptors: (input, out, err))
        } catch {
            for fd in readEnds { close(fd) }
            throw error
        }
        self.executable = executable
        outputs = collectors
        // Each collected stream is read to its end on a thread of its own, so that
        // a child never waits on a full pipe whatever the test is doing.
        var ends = readEnds.makeIterator()
        for collector in collectors {
            guard let collector, let fd = ends.next() else { continue }
            Thread { collector.read(fd) }.start()
        }
    }

    deinit {
        // A child is never left behind: one still running when the last reference
        // goes is killed and reaped.
        stop()
    }

    /// How the child ended; `nil` while it runs.
    public var termination: Termination? { reap() }

    /// Whether the child still runs.
    public var isRunning: Bool { reap() == nil }

    /// Sends `signal` to the child, unless it has been reaped.
    public func send(_ signal: Int32) {
        ended.withLock { ended in
            if ended == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// Asks the child to stop (SIGTERM).
    public func terminate() { send(SIGTERM) }

    /// Waits until the child has ended, looking every 20 ms and sleeping between
    /// looks (never holding a thread of the concurrency pool), for up to `limit`;
    /// answers whether it ended.
    @discardableResult
    public func exited(within limit: Duration = .seconds(60)) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while isRunning && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return !isRunning
    }

    /// Kills the child with SIGKILL and reaps it, if it still runs; waits up to 10 s.
    /// For a `defer` right after the start, so that a test that fails half-way
    /// leaves no child behind.
    public func stop() {
        guard isRunning else { return }
        send(SIGKILL)
        let deadline = ContinuousClock.now + .seconds(10)
        while isRunning && ContinuousClock.now < deadline { usleep(5_000) }
    }

    /// What the child wrote to standard output so far (``Output/collect`` only).
    public var standardOutput: String { outputs.first??.text ?? "" }
    /// What the child wrote to standard error so far (``Output/collect`` only).
    public var standardError: String { outputs.last??.text ?? "" }
    /// Whether the child's standard output has reached its end (every writer closed
    /// it); `true` when it is not collected.
    public var standardOutputClosed: Bool { outputs.first??.isClosed ?? true }

    /// Reaps the child if it has ended; answers how, or `nil` while it runs.
    private func reap() -> Termination? {
        ended.withLock { ended in
            if let ended { return ended }
            var status: Int32 = 0
            let reaped = waitpid(processIdentifier, &status, WNOHANG)
            if reaped == processIdentifier {
                ended = Subprocess.termination(status)
            } else if reaped < 0 && errno == ECHILD {
                ended = .exit(-1)  // Reaped elsewhere; it is not running.
            }
            return ended
        }
    }

    /// A `waitpid` status as an exit or a signal.
    static func termination(_ status: Int32) -> Termination {
        (status & 0x7f) == 0 ? .exit((status >> 8) & 0xff) : .signal(status & 0x7f)
    }
}

/// One output stream of a child, read to its end.
final class CollectedOutput: Sendable {
    private let state = ConditionLock<(data: Data, closed: Bool)>((Data(), false))

    var text: String { state.withLock { String(decoding: $0.data, as: UTF8.self) } }
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Reads `fd` until its end, then closes it.
    func read(_ fd: Int32) {
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            state.withLockBroadcasting { $0.data.append(contentsOf: buffer[0..<count]) }
        }
        state.withLockBroadcasting { $0.closed = true }
    }
}

/// Starts `executable` with `descriptors` as its standard input, output and error,
/// every other descriptor closed, and signals reset; answers its process id.
func spawn(
    _ executable: String, _ arguments: [String], environment: [String: String], directory: String?,
    descriptors: (input: Int32, output: Int32, error: Int32)
) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // dup2 clears close-on-exec on the child's 0, 1 and 2; everything above closes.
    var rc = posix_spawn_file_actions_adddup2(&actions, descriptors.input, 0)
    if rc == 0 { rc = posix_spawn_file_actions_adddup2(&actions, descriptors.output, 1) }
    if rc == 0 { rc = posix_spawn_file_actions_adddup2(&actions, descriptors.error, 2) }
    if rc == 0 { rc = islet_spawn_close_from(&actions, 3) }
    if rc == 0, let directory { rc = islet_spawn_chdir(&actions, directory) }
    if rc == 0 { rc = islet_spawn_reset_signals(&attributes) }
    guard rc == 0 else { throw CommandError(message: "cannot prepare \(executable): \(String(cString: strerror(rc)))") }
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard spawned == 0 else { throw CommandError(message: "cannot run \(executable): \(String(cString: strerror(spawned)))") }
    return pid
}
