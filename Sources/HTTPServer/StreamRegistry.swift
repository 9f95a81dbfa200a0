import IsletSync
internal import CMicroHTTPD
import Foundation
import Glibc
import Synchronization

/// A server's streamed responses that have not ended, so that shutdown can end them,
/// and the resumes of their connections under way, which the daemon's stop waits for
/// (libmicrohttpd must not be stopped with a connection suspended, nor one resumed
/// after it stopped).
final class StreamRegistry: Sendable {
    /// The most bytes a stream queues for a client that does not keep up.
    let bufferLimit: Int
    /// Watches the sockets of suspended streams for the client going.
    let watcher = HangupWatcher()
    /// Resumes begun and not yet returned.
    let resuming = InFlightCount()
    /// The clock a stream's timed wait runs on (the server's).
    let clock: any Clock<Duration>
    /// Where producers run.
    private let tasks: TaskThreads
    private let streams = Lock<(open: [UInt64: HTTPBodyWriter], closing: Bool)>(([:], false))
    private let nextID = Atomic<UInt64>(1)

    /// libmicrohttpd asks a content reader for at most this much at a time.
    static let blockSize = 16 * 1024

    init(bufferLimit: Int, tasks: TaskThreads, clock: any Clock<Duration>) {
        self.bufferLimit = max(1, bufferLimit)
        self.tasks = tasks
        self.clock = clock
    }

    /// Streams not yet released by libmicrohttpd.
    var openCount: Int { streams.withLock { $0.open.count } }

    /// Queues a streamed response on `connection` (on the event-loop thread, from the
    /// access handler) and starts its producer; answers libmicrohttpd's verdict.
    func queue(
        _ connection: OpaquePointer, status: Int, headers: HTTPHeaders,
        producer: @escaping @Sendable (HTTPBodyWriter) async -> Void
    ) -> MHD_Result {
        let writer = HTTPBodyWriter(id: nextID.add(1, ordering: .relaxed).oldValue, streams: self)
        writer.attach(connection: connection)
        let accepted = streams.withLock { s -> Bool in
            guard !s.closing else { return false }
            s.open[writer.id] = writer
            return true
        }
        // Made while the server stops: it ends at once, and its producer finds it closed.
        if !accepted { writer.finish() }
        // libmicrohttpd holds the writer from here until it calls the free callback,
        // exactly once, when it destroys the response.
        let context = Unmanaged.passRetained(writer).toOpaque()
        let created = islet_mhd_response_streaming(
            Self.blockSize,
            { context, _, buffer, capacity in
                let writer = Unmanaged<HTTPBodyWriter>.fromOpaque(context!).takeUnretainedValue()
                return writer.read(into: UnsafeMutableRawPointer(buffer!), capacity: capacity)
            },
            context,
            { context in
                let writer = Unmanaged<HTTPBodyWriter>.fromOpaque(context!).takeRetainedValue()
                writer.responseReleased()
            })
        guard let created else {
            Unmanaged<HTTPBodyWriter>.fromOpaque(context).release()
            writer.responseReleased()
            return .NO
        }
        defer { MHD_destroy_response(created) }
        for (name, value) in headers {
            _ = MHD_add_response_header(created, name, value)
        }
        let queued = MHD_queue_response(connection, UInt32(status), created)
        // Not queued: destroying the response releases the writer, which closes it.
        if queued == .YES {
            Task(executorPreference: tasks) {
                await producer(writer)
                writer.finish()
            }
        }
        return queued
    }

    /// Forgets a stream libmicrohttpd has released.
    func remove(_ writer: HTTPBodyWriter) {
        streams.withLock { _ = $0.open.removeValue(forKey: writer.id) }
    }

    /// Ends every stream (their writers take no more bytes; what they hold is still
    /// sent) and every stream queued from now on; resumes the suspended ones, so that
    /// none is suspended when the daemon stops. Calling it again does nothing more.
    func closeAll() {
        let open = streams.withLock { s -> [HTTPBodyWriter] in
            s.closing = true
            return Array(s.open.values)
        }
        for writer in open { writer.finish() }
    }
}
