public import Foundation
public import IsletCore

/// One push, as the pushes route reports it.
public struct PushHistoryItem: Sendable, Hashable {
    /// The push's row id (0 for one that has none: its send's ordinary outcome).
    public var id: Int64
    /// Its send (the order of the history: by send, then device).
    public var sendID: Int64 = 0
    /// The device.
    public var deviceID: String
    /// The kind of token it went to.
    public var tokenKind: PushTokenKind
    /// Start, update, end or alert.
    public var event: PushEvent
    /// Queued, sent, failed or dropped.
    public var status: PushStatus
    /// The environment it went to (last).
    public var environment: APNsEnvironment
    /// Whether it was sent again to the other environment after a BadDeviceToken.
    public var environmentSwitched: Bool
    /// The last APNs status.
    public var apnsStatus: Int?
    /// The APNs reason, or Islet's own reason for a push it did not send.
    public var reason: String?
    /// `apns-id`.
    public var apnsID: String
    /// The push service's id of the message: APNs's `apns-unique-id` (the sandbox
    /// gives one), or FCM's message name (`projects/…/messages/…`).
    public var serviceMessageID: String?
    /// Attempts made.
    public var attempts: Int
    /// When it was queued.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date
    /// When APNs accepted it.
    public var sentAt: Date?
    /// Taps on the activity the app reported and attributed to this push.
    public var taps: Int
    /// The earliest of those taps.
    public var firstTappedAt: Date?
    /// Whether it went at priority 5 instead of its send's 10: its copy's
    /// priority-10 budget was spent.
    public var priorityDowngraded: Bool
    /// When it was held back to, its device having had all the starts it may have
    /// in an hour.
    public var deferredUntil: Date?
    /// Whether it is held back now (queued, its `deferredUntil` still ahead): shown
    /// as `deferred`.
    public var isDeferred = false
    /// When the device said it showed this push's send (a receipt), if it did.
    public var receivedAt: Date?

    /// Creates a record.
    public init(
        id: Int64, deviceID: String, tokenKind: PushTokenKind, event: PushEvent, status: PushStatus,
        environment: APNsEnvironment, environmentSwitched: Bool, apnsStatus: Int?, reason: String?, apnsID: String,
        serviceMessageID: String?, attempts: Int, createdAt: Date, updatedAt: Date, sentAt: Date?, taps: Int = 0,
        firstTappedAt: Date? = nil, priorityDowngraded: Bool = false, deferredUntil: Date? = nil
    ) {
        self.id = id
        self.deviceID = deviceID
        self.tokenKind = tokenKind
        self.event = event
        self.status = status
        self.environment = environment
        self.environmentSwitched = environmentSwitched
        self.apnsStatus = apnsStatus
        self.reason = reason
        self.apnsID = apnsID
        self.serviceMessageID = serviceMessageID
        self.attempts = attempts
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.sentAt = sentAt
        self.taps = taps
        self.firstTappedAt = firstTappedAt
        self.priorityDowngraded = priorityDowngraded
        self.deferredUntil = deferredUntil
    }
}
