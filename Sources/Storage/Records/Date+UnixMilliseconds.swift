public import Foundation
import IsletCore

extension Date {
    /// Whole Unix milliseconds, as the store keeps times (rounded down).
    ///
    /// A `Date` keeps seconds since 2001 in a `Double`: the seconds since 1970 it
    /// answers are off by up to a few tenths of a microsecond, so a date made from
    /// whole milliseconds (every date the store reads, and that date plus one
    /// millisecond) may read as a hair below its millisecond. Rounded to the nearest
    /// microsecond first, it reads as the millisecond it is.
    ///
    /// A date past what 64 bits of milliseconds hold (some 292 million years from
    /// 1970, either way) is the nearest they hold: never a trap.
    public var unixMilliseconds: Int64 {
        let micros = (timeIntervalSince1970 * 1_000_000).rounded()
        return Int64(saturating: (micros / 1000).rounded(.down))
    }

    /// The date `milliseconds` after 1970.
    public init(unixMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
