extension FixedWidthInteger {
    /// `value` rounded toward zero, as `init(_:)` rounds it, but held to the type's
    /// range where `init(_:)` would trap: a number past either end (an infinity
    /// too) gives that end, and NaN gives 0. For arithmetic on figures that come
    /// from a request or from storage, which must answer something rather than stop
    /// the process.
    @inlinable
    public init(saturating value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= Double(Self.max) {
            // Double(Int64.max) is 2^63, the first Double past it.
            self = .max
        } else if value <= Double(Self.min) {
            self = .min
        } else {
            self.init(value)
        }
    }
}
