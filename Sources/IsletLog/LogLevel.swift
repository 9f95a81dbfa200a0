/// How important a log event is; a logger drops events below its threshold.
public enum LogLevel: String, Sendable, CaseIterable, Comparable {
    case debug, info, notice, warning, error

    private var rank: Int {
        switch self {
        case .debug: 0
        case .info: 1
        case .notice: 2
        case .warning: 3
        case .error: 4
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rank < rhs.rank }
}

/// How each log event is written: one line per event either way.
public enum LogFormat: String, Sendable, CaseIterable {
    /// One JSON object per line.
    case json
    /// `key=value` pairs, quoted where needed (the logfmt convention).
    case logfmt
}
