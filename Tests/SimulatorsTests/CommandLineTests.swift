import Foundation
import IsletCore
import Simulators
import Testing

/// `islet sim`'s flags, read into the simulator's options.
@Suite("Simulator: command line")
struct CommandLineTests {
    @Test func defaultsAreTheDocumentedOnes() throws {
        let parsed = try SimulatorCommandLine.parse([])
        #expect(parsed.options.port == 2197)
        #expect(parsed.options.inspectPort == 2198)
        #expect(parsed.options.maxStreams == 1_000)
        #expect(parsed.options.engine.environment == .sandbox)
        #expect(parsed.options.latency == nil)
        #expect(parsed.options.goawayAfterStreams == nil)
        #expect(parsed.options.engine.faultInjection.failRate == 0)
        #expect(parsed.options.tls == nil)
        #expect(parsed.caOutputPath == "islet-sim-ca.pem")
    }

    @Test func everyFlagReachesItsOption() throws {
        let parsed = try SimulatorCommandLine.parse([
            "--port", "0", "--inspect-port=0", "--environment", "production", "--latency-ms", "25",
            "--fail-rate", "0.25", "--fail-status", "429", "--goaway-after", "100", "--max-streams", "50",
            "--threads", "2", "--ca-out", "/tmp/ca.pem",
        ])
        #expect(parsed.options.port == 0)
        #expect(parsed.options.inspectPort == 0)
        #expect(parsed.options.engine.environment == .production)
        #expect(parsed.options.latency == .milliseconds(25))
        #expect(parsed.options.engine.faultInjection.failRate == 0.25)
        #expect(parsed.options.engine.faultInjection.failStatus == .tooManyRequests)
        #expect(parsed.options.goawayAfterStreams == 100)
        #expect(parsed.options.maxStreams == 50)
        #expect(parsed.options.threads == 2)
        #expect(parsed.caOutputPath == "/tmp/ca.pem")
    }

    @Test(arguments: [
        (["--fail-rate", "1.5"], "--fail-rate"), (["--fail-status", "404"], "--fail-status"),
        (["--max-streams", "0"], "--max-streams"), (["--environment", "staging"], "--environment"),
        (["--cert", "/nonexistent"], "--key"), (["--goaway-after"], "--goaway-after"), (["--bogus"], "--bogus"),
    ])
    func badFlagsNameTheFlag(arguments: [String], setting: String) {
        #expect {
            _ = try SimulatorCommandLine.parse(arguments)
        } throws: { error in
            (error as? ConfigurationError)?.setting == setting
        }
    }

    @Test func inspectionStaysOnLoopbackWhenHostMoves() throws {
        // --host moves APNs only: the unauthenticated inspection API stays on
        // loopback unless --inspect-host moves it, and then a warning says so.
        let wide = try SimulatorCommandLine.parse(["--host", "0.0.0.0"])
        #expect(wide.options.host == "0.0.0.0")
        #expect(wide.options.inspectHost == "127.0.0.1")
        #expect(wide.warnings.isEmpty)
        #expect(wide.banner(apnsPort: 2197, inspectPort: 2198, wroteCA: false).hasPrefix(
            "islet sim: APNs (sandbox) on https://0.0.0.0:2197, inspection on http://127.0.0.1:2198"))
        let exposed = try SimulatorCommandLine.parse(["--inspect-host", "0.0.0.0"])
        #expect(exposed.options.inspectHost == "0.0.0.0")
        #expect(exposed.warnings.count == 1)
        #expect(exposed.warnings.first?.contains("no authentication") == true)
        #expect(exposed.warnings.first?.contains("0.0.0.0") == true)
        #expect(try SimulatorCommandLine.parse(["--inspect-host", "::1"]).warnings.isEmpty)
        #expect(try SimulatorCommandLine.parse(["--inspect-host", "0.0.0.0", "--inspect-port", "0"]).warnings.count == 1)
        #expect(SimulatorCommandLine.helpText.contains("--inspect-host"))
        #expect(!SimulatorCommandLine.helpText.contains("port on 127.0.0.1"))
    }

    @Test func anIPv6AddressIsPrintedAsAUsableURL() throws {
        let parsed = try SimulatorCommandLine.parse(["--host", "::1", "--inspect-host", "::1", "--ca-out", "ca.pem"])
        #expect(parsed.banner(apnsPort: 34_827, inspectPort: 34_828, wroteCA: true)
            == "islet sim: APNs (sandbox) on https://[::1]:34827, inspection on http://[::1]:34828, CA in ca.pem"
            + "; no --trust key given, so every provider token is refused")
    }
}
