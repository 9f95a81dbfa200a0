public import Foundation
import IsletSync

/// The Python tools of scripts/test-requirements.txt, in .build/test-venv, and the
/// scripts of scripts/ that run on them.
public enum PythonTools {
    /// The repository's root: this file is Tests/IsletTesting/… in it.
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The virtual environment's Python, or a failure that says how to make it.
    public static func python() throws -> String {
        let path = root.appendingPathComponent(".build/test-venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw RawHTTPError(
                "the test tools are not installed at \(path): run ./scripts/test-tools.sh (make test runs it) to make .build/test-venv")
        }
        return path
    }

    /// A script of the repository (`scripts/peers/…`), or a failure naming it.
    public static func script(_ relativePath: String) throws -> String {
        let path = root.appendingPathComponent(relativePath).path
        guard FileManager.default.fileExists(atPath: path) else { throw RawHTTPError("the script \(path) is missing") }
        return path
    }
}

/// A child process whose standard output is read line by line as it comes, killed
/// and reaped by ``stop()`` (call it from a `defer`) if it still runs.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` is set up before `run()` and only read after;
    // the output is behind its lock.
    private let process = Process()
    private let output = ConditionLock<(lines: [String], partial: Data, closed: Bool)>(([], Data(), false))
    private let errors = ConditionLock<Data>(Data())

    /// Starts `executable` with `arguments`; standard input is empty.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var variables = ProcessInfo.processInfo.environment
        variables["PYTHONDONTWRITEBYTECODE"] = "1"
        variables["PYTHONUNBUFFERED"] = "1"
        for (name, value) in environment { variables[name] = value }
        process.environment = variables
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        out.fileHandleForReading.readabilityHandler = { [output] handle in
            let data = handle.availableData
            output.withLockBroadcasting { state in
                if data.isEmpty {
                    state.closed = true
                    handle.readabilityHandler = nil
                    if !state.partial.isEmpty { state.lines.append(String(decoding: state.partial, as: UTF8.self)) }
                    state.partial = Data()
                    return
                }
                state.partial.append(data)
                while let newline = state.partial.firstIndex(of: 0x0A) {
                    state.lines.append(String(decoding: state.partial[state.partial.startIndex..<newline], as: UTF8.self))
                    state.partial = Data(state.partial[state.partial.index(after: newline)...])
                }
            }
        }
        err.fileHandleForReading.readabilityHandler = { [errors] handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                return
            }
            errors.withLockBroadcasting { $0.append(data) }
        }
        try process.run()
    }

    /// The lines printed so far.
    public var lines: [String] { output.withLock { $0.lines } }

    /// What the process wrote to standard error so far.
    public var standardError: String { errors.withLock { String(decoding: $0, as: UTF8.self) } }

    /// Waits up to `deadline` for the first line that satisfies `match`.
    public func line(within deadline: Duration = .seconds(60), where match: (String) -> Bool = { _ in true }) async -> String? {
        var found: String?
        _ = await eventually(within: deadline) {
            let state = output.withLock { ($0.lines, $0.closed) }
            found = state.0.first(where: match)
            return found != nil || state.1
        }
        return found
    }

    /// Waits up to `deadline` for the process to end; answers its exit status, or
    /// `nil` if it still runs.
    public func exitStatus(within deadline: Duration = .seconds(120)) async -> Int32? {
        let ended = await eventually(within: deadline) { !self.process.isRunning }
        guard ended else { return nil }
        // Its output may still be on its way through the pipe.
        _ = await eventually(within: .seconds(10)) { self.output.withLock { $0.closed } }
        return process.terminationStatus
    }

    /// Kills and reaps the process if it still runs.
    public func stop() {
        killIfRunning(process)
    }
}
