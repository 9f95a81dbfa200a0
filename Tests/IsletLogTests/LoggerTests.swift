import Foundation
import IsletCore
@testable import IsletLog
import Testing

@Suite("Logger")
struct LoggerTests {
    let clock = ManualWallClock(start: Date(timeIntervalSince1970: 1_764_444_800.123))

    @Test func jsonLinesAreObjectsWithTimeLevelAndFields() throws {
        let sink = MemoryLogSink()
        let logger = Logger(level: .debug, format: .json, sink: sink, clock: clock).with("app", "demo")
        logger.info("push sent", ("status", 200), ("ok", true), ("latency", 1.5), ("reason", "line\nbreak \"q\""))
        let line = try #require(sink.lines.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["time"] as? String == "2025-11-29T19:33:20.123Z")
        #expect(object["level"] as? String == "info")
        #expect(object["msg"] as? String == "push sent")
        #expect(object["app"] as? String == "demo")
        #expect(object["status"] as? Int == 200)
        #expect(object["ok"] as? Bool == true)
        #expect(object["latency"] as? Double == 1.5)
        #expect(object["reason"] as? String == "line\nbreak \"q\"")
        #expect(!line.contains("\n"))
    }

    @Test func logfmtQuotesOnlyWhereNeeded() {
        let sink = MemoryLogSink()
        let logger = Logger(level: .info, format: .logfmt, sink: sink, clock: clock)
        logger.warning("token rejected", ("reason", "BadDeviceToken"), ("detail", "has space"), ("empty", ""))
        #expect(sink.lines == [
            "time=2025-11-29T19:33:20.123Z level=warning msg=\"token rejected\" reason=BadDeviceToken detail=\"has space\" empty=\"\"",
        ])
    }

    @Test func secretsAreRedactedInEveryFormat() {
        let token = "a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8c9d0a1b2"
        for format in LogFormat.allCases {
            let sink = MemoryLogSink()
            Logger(format: format, sink: sink, clock: clock).info("registered", ("token", .secret(token)))
            let line = sink.lines.joined()
            #expect(!line.contains(token))
            #expect(line.contains("a1b2c3…(64)"))
        }
    }

    @Test func levelsBelowTheThresholdAreDropped() {
        let sink = MemoryLogSink()
        let logger = Logger(level: .warning, sink: sink, clock: clock)
        logger.debug("d")
        logger.info("i")
        logger.notice("n")
        logger.warning("w")
        logger.error("e")
        #expect(sink.lines.count == 2)
        #expect(sink.lines[0].contains("level=warning"))
        #expect(sink.lines[1].contains("level=error"))
    }

    @Test func timestampsBeforeTheEpochAndAtLeapDays() {
        #expect(Logger.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Logger.timestamp(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00.000Z")
        #expect(Logger.timestamp(Date(timeIntervalSince1970: -1.5)) == "1969-12-31T23:59:58.500Z")
    }
}
