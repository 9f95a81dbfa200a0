import Foundation
import HTTP2
import IsletSync
import Testing

@Suite("Reconnect backoff")
struct ReconnectBackoffTests {
    /// A client configuration whose jitter keeps the ceilings it was asked for and
    /// answers half of each.
    func configuration(_ ceilings: Lock<[Double]>) -> HTTP2ClientConfiguration {
        var configuration = HTTP2ClientConfiguration(host: "localhost", port: 1, tls: nil)
        configuration.reconnectBackoff = .milliseconds(100)
        configuration.reconnectBackoffMax = .seconds(1)
        configuration.jitter = { ceiling in
            ceilings.withLock { $0.append(ceiling) }
            return ceiling / 2
        }
        return configuration
    }

    @Test func doublesPerFailureUpToItsCeilingWithTheInjectedJitter() {
        let ceilings = Lock<[Double]>([])
        let configuration = configuration(ceilings)
        let delays = (1...6).map { configuration.reconnectDelay(afterFailures: $0) }
        let expected = [0.1, 0.2, 0.4, 0.8, 1, 1]
        #expect(ceilings.withLock { $0 }.enumerated().allSatisfy { abs($1 - expected[$0]) < 1e-9 })
        #expect(delays.enumerated().allSatisfy { abs($1 - expected[$0] / 2) < 1e-9 })
        // However many failures: the exponent is bounded, the ceiling holds.
        #expect(abs(configuration.reconnectDelay(afterFailures: 10_000) - 0.5) < 1e-9)
    }

    @Test func theDefaultJitterStaysWithinTheCeiling() {
        let configuration = HTTP2ClientConfiguration(host: "localhost", port: 1, tls: nil)
        for failures in 1...30 {
            let delay = configuration.reconnectDelay(afterFailures: failures)
            #expect(delay >= 0 && delay <= configuration.reconnectBackoffMax.components.seconds.double)
        }
    }
}

extension Int64 {
    fileprivate var double: Double { Double(self) }
}
