public import Foundation

extension Date {
    /// Whole Unix milliseconds, as the store keeps times.
    public var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The date `milliseconds` after 1970.
    public init(unixMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
