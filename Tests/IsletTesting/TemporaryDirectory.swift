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
/// Spawned as ``Subprocess`` spawns (not through Foundation's `Process`, see there)
/// and reaped with `waitpid` here.
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
    var variables = ProcessInfo.processInfo.environment
    variables.merge(environment) { $1 }
    let pid: pid_t
    do {
        pid = try spawn(
            executable, arguments, environment: variables, directory: nil,
            descriptors: (inPipe[0], outPipe[1], errPipe[1]))
        close(inPipe[0])
        close(outPipe[1])
        close(errPipe[1])
    } catch {
        for fd in inPipe + outPipe + errPipe { close(fd) }
        throw error
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
    // A signal as 128 + its number, as a shell says it.
    let code: Int32 = switch Subprocess.termination(status) {
    case .exit(let code): code
    case .signal(let number): 128 + number
    }
    return (code, String(decoding: outData, as: UTF8.self), String(decoding: errorOutput, as: UTF8.self))
}

/// `runCommand`, from a task: the command runs and is waited for on a thread of its
/// own, since waiting for a child process on one of the concurrency pool's few
/// threads (two on a 2-core machine) would hold up every other test meanwhile. An
/// async caller gets this one (Swift prefers the async overload there), so no test
/// can wait for a child on the pool by mistake.
@discardableResult
public func runCommand(
    _ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:]
) async throws -> (status: Int32, output: String, error: String) {
    try await runBlocking { try runCommand(executable, arguments, input: input, environment: environment) }
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
