public import Foundation
import IsletSync

/// A fresh folder under the system's temporary folder, removed when `body` returns.
public func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async rethrows -> T {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("islet-test-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url)
}

/// Runs an external command; answers its exit status and what it printed.
@discardableResult
public func runCommand(
    _ executable: String, _ arguments: [String], input: Data? = nil, environment: [String: String] = [:]
) throws -> (status: Int32, output: String, error: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let inPipe = Pipe()
    process.standardInput = inPipe
    try process.run()
    // Standard error is read on a thread of its own while standard output is read
    // here: read one after the other, a command that fills the second pipe before
    // closing the first would wait for us while we wait for it.
    let errData = ConditionLock<Data?>(nil)
    Thread {
        let data = err.fileHandleForReading.readDataToEndOfFile()
        errData.withLockBroadcasting { $0 = data }
    }.start()
    if let input { inPipe.fileHandleForWriting.write(input) }
    try inPipe.fileHandleForWriting.close()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errorOutput = errData.wait(until: { $0 != nil }) { $0 ?? Data() }
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errorOutput, as: UTF8.self))
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
public func killIfRunning(_ process: Process) {
    guard process.isRunning else { return }
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
}
