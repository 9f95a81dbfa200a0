/// How an activity was renewed past its 8 hours, or how it renews another.
public struct RenewalLinks: Sendable, Hashable {
    /// Its successor, once renewed.
    public var renewedTo: String?
    /// The activity it succeeds.
    public var renewedFrom: String?
    /// The devices of the renewed activity that could not be renewed (no
    /// push-to-start token for its type).
    public var notRenewed: [String]

    /// Creates links.
    public init(renewedTo: String? = nil, renewedFrom: String? = nil, notRenewed: [String] = []) {
        self.renewedTo = renewedTo
        self.renewedFrom = renewedFrom
        self.notRenewed = notRenewed
    }
}
