/// A push APNs accepted, as ``PushQueue/recordSent(_:by:now:)`` records it.
public struct SentPush: Sendable, Hashable {
    /// The push.
    public var pushID: Int64
    /// Requests made for it in this round.
    public var attempts: Int
    /// APNs's HTTP status (200), when it answered.
    public var apnsStatus: Int?
    /// The push service's id of the message: APNs's `apns-unique-id` (the sandbox
    /// gives one), or FCM's message name (`projects/…/messages/…`).
    public var serviceMessageID: String?

    /// A push sent after `attempts` requests.
    public init(pushID: Int64, attempts: Int, apnsStatus: Int?, serviceMessageID: String?) {
        self.pushID = pushID
        self.attempts = attempts
        self.apnsStatus = apnsStatus
        self.serviceMessageID = serviceMessageID
    }
}
