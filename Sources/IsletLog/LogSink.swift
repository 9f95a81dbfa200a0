import IsletSync
import Glibc

/// Where finished log lines go.
public protocol LogSink: Sendable {
    /// Writes one complete line (without its newline).
    func write(line: String)
}

/// Writes lines to the process's standard error, one `write(2)` per line so that lines
/// from different threads never interleave.
public struct StandardErrorLogSink: LogSink {
    /// Creates the sink.
    public init() {}

    public func write(line: String) {
        var bytes = Array(line.utf8)
        bytes.append(0x0A)
        bytes.withUnsafeBufferPointer { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 {
                    if n < 0 && errno == EINTR { continue }
                    return
                }
                offset += n
            }
        }
    }
}

/// Keeps lines in memory, for tests that read back what was logged.
public final class MemoryLogSink: LogSink {
    private let storage = Lock<[String]>([])

    /// Creates an empty sink.
    public init() {}

    public func write(line: String) {
        storage.withLock { $0.append(line) }
    }

    /// Every line written so far, oldest first.
    public var lines: [String] { storage.withLock { $0 } }
}
