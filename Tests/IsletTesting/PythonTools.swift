public import Foundation

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
public final class ChildProcess: Sendable {
    private let process: Subprocess

    /// Starts `executable` with `arguments`, in `directory` (ours when `nil`);
    /// standard input is empty.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil) throws {
        var variables = environment
        variables["PYTHONDONTWRITEBYTECODE"] = variables["PYTHONDONTWRITEBYTECODE"] ?? "1"
        variables["PYTHONUNBUFFERED"] = variables["PYTHONUNBUFFERED"] ?? "1"
        process = try Subprocess(
            executable, arguments, environment: variables, directory: directory, standardOutput: .collect, standardError: .collect)
    }

    /// The lines printed so far (a last line without its newline once the output
    /// has ended).
    public var lines: [String] {
        let text = process.standardOutput
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // What follows the last newline is a line only once nothing more can come.
        if let last = lines.last, last.isEmpty || !process.standardOutputClosed { lines.removeLast() }
        return lines
    }

    /// What the process wrote to standard error so far.
    public var standardError: String { process.standardError }

    /// Waits up to `deadline` for the first line that satisfies `match`.
    public func line(within deadline: Duration = .seconds(60), where match: (String) -> Bool = { _ in true }) async -> String? {
        var found: String?
        _ = await eventually(within: deadline) {
            let closed = process.standardOutputClosed
            found = lines.first(where: match)
            return found != nil || closed
        }
        return found
    }

    /// Waits up to `deadline` for the process to end; answers its exit status (128
    /// plus the signal's number for a signal), or `nil` if it still runs.
    public func exitStatus(within deadline: Duration = .seconds(120)) async -> Int32? {
        guard await process.exited(within: deadline) else { return nil }
        // Its output may still be on its way through the pipe.
        _ = await eventually(within: .seconds(10)) { process.standardOutputClosed }
        return switch process.termination {
        case .exit(let status): status
        case .signal(let number): 128 + number
        case nil: nil
        }
    }

    /// Asks the process to stop (SIGTERM), as a service manager does.
    public func terminate() {
        process.terminate()
    }

    /// Kills and reaps the process if it still runs.
    public func stop() {
        process.stop()
    }
}
