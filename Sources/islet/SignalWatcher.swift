import Dispatch
import Foundation

/// Turns SIGTERM and SIGINT into a callback on a private queue instead of the
/// process's default action, so shutdown can run in order.
final class SignalWatcher {
    private let sources: [any DispatchSourceSignal]

    init(signals: [Int32], onSignal: @escaping @Sendable (String) -> Void) {
        let queue = DispatchQueue(label: "islet.signals")
        sources = signals.map { number in
            // The default action must be off before the source can see the signal.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            let name = number == SIGTERM ? "SIGTERM" : number == SIGINT ? "SIGINT" : "signal \(number)"
            source.setEventHandler { onSignal(name) }
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
