import IsletCore

/// An APNs refusal: the reason answered, and a plain-English note for the record.
struct Refusal: Error {
    var reason: APNsReason
    var note: String
    /// For 410: when the token stopped being valid, in milliseconds since 1970.
    var timestampMilliseconds: Int64?

    init(_ reason: APNsReason, _ note: String, timestampMilliseconds: Int64? = nil) {
        self.reason = reason
        self.note = note
        self.timestampMilliseconds = timestampMilliseconds
    }

    /// The answer's status; an unknown reason (never produced here) would be a 400.
    var status: Int { reason.status ?? 400 }
}
