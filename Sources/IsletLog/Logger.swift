import Foundation
public import IsletCore

/// A structured logger: each event is one line with a time, a level, a message and
/// fields, written as JSON or logfmt. Loggers are values; `with` derives one that adds
/// fields to every event (a request id, an app id).
public struct Logger: Sendable {
    /// Events below this level are dropped.
    public var level: LogLevel
    /// The line format.
    public let format: LogFormat
    /// Fields added to every event of this logger.
    public private(set) var metadata: [(String, LogValue)]
    private let sink: any LogSink
    private let clock: any WallClock

    /// Creates a logger writing to `sink` at `level` and above.
    public init(
        level: LogLevel = .info,
        format: LogFormat = .logfmt,
        sink: any LogSink = StandardErrorLogSink(),
        clock: any WallClock = SystemWallClock()
    ) {
        self.level = level
        self.format = format
        self.sink = sink
        self.clock = clock
        self.metadata = []
    }

    /// A logger that adds `key=value` to every event.
    public func with(_ key: String, _ value: LogValue) -> Logger {
        var copy = self
        copy.metadata.append((key, value))
        return copy
    }

    /// Whether an event at `level` would be written.
    public func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    /// Writes one event if `level` passes the threshold.
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String, _ fields: [(String, LogValue)] = []) {
        guard isEnabled(level) else { return }
        sink.write(line: render(level: level, message: message(), fields: metadata + fields))
    }

    public func debug(_ message: @autoclosure () -> String, _ fields: (String, LogValue)...) {
        log(.debug, message(), fields)
    }
    public func info(_ message: @autoclosure () -> String, _ fields: (String, LogValue)...) {
        log(.info, message(), fields)
    }
    public func notice(_ message: @autoclosure () -> String, _ fields: (String, LogValue)...) {
        log(.notice, message(), fields)
    }
    public func warning(_ message: @autoclosure () -> String, _ fields: (String, LogValue)...) {
        log(.warning, message(), fields)
    }
    public func error(_ message: @autoclosure () -> String, _ fields: (String, LogValue)...) {
        log(.error, message(), fields)
    }

    private func render(level: LogLevel, message: String, fields: [(String, LogValue)]) -> String {
        let time = Logger.timestamp(clock.now())
        switch format {
        case .json:
            var line = "{\"time\":\"\(time)\",\"level\":\"\(level.rawValue)\",\"msg\":\(JSONText.quoted(message))"
            for (key, value) in fields {
                line += ",\(JSONText.quoted(key)):"
                switch value {
                case .int(let i): line += String(i)
                case .double(let d) where d.isFinite: line += String(d)
                case .bool(let b): line += b ? "true" : "false"
                default: line += JSONText.quoted(value.description)
                }
            }
            return line + "}"
        case .logfmt:
            var line = "time=\(time) level=\(level.rawValue) msg=\(Logger.logfmtValue(message))"
            for (key, value) in fields {
                line += " \(key)=\(Logger.logfmtValue(value.description))"
            }
            return line
        }
    }

    /// RFC 3339 in UTC with milliseconds, built by hand: `ISO8601DateFormatter` is not
    /// `Sendable` and costs more than the rest of the line.
    static func timestamp(_ date: Date) -> String {
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = millis / 1000
        var ms = millis % 1000
        if ms < 0 { ms += 1000; seconds -= 1 }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        // Civil-from-days (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ v: Int64, _ width: Int) -> String {
            let s = String(v)
            return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay % 3600 / 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(ms, 3))Z"
    }

    /// A logfmt value: bare when it is a plain word, quoted and escaped otherwise.
    static func logfmtValue(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains { scalar in
            scalar == " " || scalar == "=" || scalar == "\"" || scalar == "\\" || scalar.value < 0x20
        }
        return needsQuotes ? JSONText.quoted(value) : value
    }
}
