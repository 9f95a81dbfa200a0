import IsletSync
import Foundation

/// Writes whole lines to standard output or error through `FileHandle`, which, unlike
/// the C `stdout` global, is safe to use from any concurrency domain.
enum Console {
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func err(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

/// Collects lines and writes them in batches (every 100 ms, or at 64 KiB), so that a
/// busy simulator does not make one system call per push. The flushing thread waits
/// on the buffer's condition, which `close` signals: it ends at once.
final class BufferedConsole: Sendable {
    private let state = ConditionLock<(bytes: [UInt8], closed: Bool)>(([], false))

    init() {
        let state = state
        Thread { [weak self] in
            while true {
                let closed = state.wait(until: { $0.closed }, timeout: .milliseconds(100)) { $0.closed }
                guard let self, !closed else { return }
                self.flush()
            }
        }.start()
    }

    func line(_ text: String) {
        let full = state.withLock { state -> Bool in
            state.bytes.append(contentsOf: text.utf8)
            state.bytes.append(0x0A)
            return state.bytes.count >= 65_536
        }
        if full { flush() }
    }

    /// Writes what is buffered and stops the periodic flush.
    func close() {
        state.withLockBroadcasting { $0.closed = true }
        flush()
    }

    private func flush() {
        let bytes = state.withLock { state -> [UInt8] in
            defer { state.bytes.removeAll(keepingCapacity: true) }
            return state.bytes
        }
        if !bytes.isEmpty { FileHandle.standardOutput.write(Data(bytes)) }
    }
}
