public import Foundation
import CLinux
import IsletSync

/// A fresh folder under the system's temporary folder, removed when `body` returns.
public func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async rethrows -> T {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("islet-test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url)
}

/// Runs an external command; answers its exit status and what it printed.
///
/// Spawned with `posix_spawn` and reaped with `waitpid` here, not through
/// Foundation's `Process`, whose exit notice depends on SIGCHLD reaching its
/// dispatch source: under ThreadSanitizer that notice was seen to never come, the
/// child stayed a zombie, and the test waited for ever on a thread of the
/// concurrency pool.
@discardableResult
public func runCommand(
    _ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:]
) throws -> (status: Int32, output: String, error: String) {
    var inPipe: [Int32] = [-1, -1]
    var outPipe: [Int32] = [-1, -1]
    var errPipe: [Int32] = [-1, -1]
    guard islet_pipe_cloexec(&inPipe) == 0, islet_pipe_cloexec(&outPipe) == 0, islet_pipe_cloexec(&errPipe) == 0 else {
        for fd in inPipe + outPipe + errPipe where fd >= 0 { close(fd) }
        throw CommandError(message: "pipe: \(String(cString: strerror(errno)))")
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    // dup2 clears close-on-exec on the child's 0, 1 and 2; every other end closes.
    posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
    posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
    posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
    var variables = ProcessInfo.processInfo.environment
    variables.merge(environment) { $1 }
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
    close(inPipe[0])
    close(outPipe[1])
    close(errPipe[1])
    guard spawned == 0 else {
        close(inPipe[1])
        close(outPipe[0])
        close(errPipe[0])
        throw CommandError(message: "cannot run \(executable): \(String(cString: strerror(spawned)))")
    }
    // Standard error is read on a thread of its own while standard output is read
    // here: read one after the other, a command that fills the second pipe before
    // closing the first would wait for us while we wait for it.
    let errData = ConditionLock<Data?>(nil)
    let errFD = errPipe[0]
    Thread {
        let data = readToEnd(errFD)
        errData.withLockBroadcasting { $0 = data }
    }.start()
    if let input {
        input.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(inPipe[1], bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { break }
                offset += written
            }
        }
    }
    close(inPipe[1])
    let outData = readToEnd(outPipe[0])
    let errorOutput = errData.wait(until: { $0 != nil }) { $0 ?? Data() }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    // WIFEXITED / WEXITSTATUS, and a signal as 128 + its number, as a shell says it.
    let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return (code, String(decoding: outData, as: UTF8.self), String(decoding: errorOutput, as: UTF8.self))
}

/// Why `runCommand` could not run a command.
public struct CommandError: Error, CustomStringConvertible {
    /// What failed.
    public let message: String
    public var description: String { message }
}

/// Everything `fd` yields until its end; closes it.
private func readToEnd(_ fd: Int32) -> Data {
    defer { close(fd) }
    var data = Data()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { return data }
        data.append(contentsOf: buffer[0..<count])
    }
}

/// The path of an executable built alongside the running test binary (such as `islet`).
public func builtProductPath(_ name: String) -> String {
    let me = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    var directory = me.deletingLastPathComponent()
    // The test runner may sit inside an `.xctest` bundle folder.
    while directory.pathExtension == "xctest" { directory = directory.deletingLastPathComponent() }
    return directory.appendingPathComponent(name).path
}

/// Kills `process` with SIGKILL and reaps it if it still runs: for a `defer` right
/// after `run()`, so that a test that fails half-way leaves no child behind.
///
/// The wait has a deadline (10 s) instead of `waitUntilExit`: Foundation learns of
/// the exit through SIGCHLD, which under ThreadSanitizer was seen to never arrive,
/// and a wait without end would hold a thread of the concurrency pool for ever.
public func killIfRunning(_ process: Process) {
    guard process.isRunning else { return }
    kill(process.processIdentifier, SIGKILL)
    let deadline = ContinuousClock.now + .seconds(10)
    while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
}

/// Waits until `process` has exited (or `limit` passes), sleeping between looks
/// instead of blocking: a graceful shutdown takes seconds under a sanitizer, and
/// `waitUntilExit` would hold a thread of the concurrency pool all that time (other
/// tests' servers answer on that pool). Answers whether it exited.
@discardableResult
public func exited(_ process: Process, within limit: Duration = .seconds(60)) async -> Bool {
    let deadline = ContinuousClock.now + limit
    while process.isRunning && ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(20))
    }
    return !process.isRunning
}
