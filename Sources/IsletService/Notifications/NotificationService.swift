import Foundation
public import IsletCore
public import Storage

/// An ordinary alert to the device tokens of an audience.
public struct SendNotification: Sendable {
    /// The app, as authenticated.
    public var app: AppRecord
    /// Who it goes to.
    public var audience: Audience
    /// The alert.
    public var alert: PushAlert?
    /// The idempotency key, if the command has one.
    public var idempotency: IdempotencyKey?

    /// Creates the command.
    public init(app: AppRecord, audience: Audience, alert: PushAlert?, idempotency: IdempotencyKey?) {
        self.app = app
        self.audience = audience
        self.alert = alert
        self.idempotency = idempotency
    }
}

/// What a notification queued.
public struct NotificationResult: ReplayableResult, Hashable {
    /// How many devices it goes to.
    public let targets: Int

    public var accepted: Bool { true }

    public var json: JSONValue { .object(["targets": .integer(Int64(targets))]) }

    public init(json: JSONValue) throws {
        guard let targets = json["targets"]?.int64Value else {
            throw StoreError(.corrupt, "a stored notification answer lacks targets")
        }
        self.targets = Int(targets)
    }

    init(targets: Int) {
        self.targets = targets
    }
}

/// Ordinary alerts: to device tokens only, never to a Live Activity token.
public struct NotificationService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = DeviceStore & PushQueue

    private let environment: ServiceEnvironment

    /// Creates the service.
    public init(environment: ServiceEnvironment) {
        self.environment = environment
    }

    /// Queues the alert to every reachable device of the audience.
    public func send(_ command: SendNotification) async throws(ServiceError) -> Replayable<NotificationResult> {
        let app = command.app
        try SendRules.requireCredentials(app)
        let now = environment.clock.now()
        return try await environment.idempotentWrite(
            appID: app.id, idempotency: command.idempotency, now: now
        ) { (session: any Stores) in
            try Self.send(command, session: session, now: now)
        }
    }

    /// Queues the alert in `session` (see `send(_:)`): for a request, and for a
    /// scheduled alert when its time comes.
    static func send(
        _ command: SendNotification, session: any DeviceStore & PushQueue, now: Date
    ) throws -> NotificationResult {
        let app = command.app
        try SendRules.requireCredentials(app)
        let built = try check(command, now: now)
        let appID = app.id
        let audience = command.audience
        let targets = try session.alertTargets(appID: appID, audience: audience)
        guard !targets.isEmpty else {
            let size = try session.audienceSize(appID: appID, audience: audience)
            throw ServiceError.invalid(
                size == 0
                    ? "The audience matches no registered device."
                    : "None of the \(size) device(s) in the audience has a reachable device token.",
                field: "audience.\(audience.field)", "names no device with a reachable device token",
                reason: ScheduleReason.noTargets)
        }
        let sendID = try session.insertSend(
            appID: appID, activityID: nil, content: SendRules.content(built, event: .alert), now: now)
        try session.enqueuePushes(
            sendID: sendID, appID: appID, activityID: nil, activityType: nil, event: .alert, tokenKind: .device,
            targets: targets, now: now, mintID: APNsMessageID.mint)
        return NotificationResult(targets: targets.count)
    }
}

extension NotificationService {
    /// Builds the alert's payload as of `now`; a broken rule names its field.
    static func check(_ command: SendNotification, now: Date) throws(ServiceError) -> BuiltPush {
        let push = AlertPush(title: command.alert?.title, body: command.alert?.body, sound: command.alert?.sound)
        do throws(PayloadError) {
            return try push.build(bundleID: command.app.bundleID, now: now)
        } catch {
            throw SendRules.payloadError(error)
        }
    }
}
