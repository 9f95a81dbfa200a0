public import Foundation

/// Dates as the API writes them: RFC 3339 in UTC with milliseconds.
public enum RFC3339 {
    /// `2026-11-29T23:08:48.893Z`, written by hand: a shared formatter would need a
    /// lock on every answer.
    public static func string(_ date: Date) -> String {
        // RFC 3339 writes the years 0000 to 9999: a date outside (none the API
        // takes, but a stored one may be anything) is written as the nearest.
        let exact = Int64(saturating: (date.timeIntervalSince1970 * 1000).rounded(.down))
        let milliseconds = min(max(exact, -62_167_219_200_000), 253_402_300_799_999)
        var seconds = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        let fraction = Int((milliseconds % 1000 + 1000) % 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(fraction), 3))Z"
    }
}
