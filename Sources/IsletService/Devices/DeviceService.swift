public import Foundation
import IsletCore
public import Storage

/// Devices and the tokens they give: the ordinary device token (with the device's
/// registration), push-to-start tokens per activity type, and update tokens per
/// activity. A token is stored under one kind only: the same text as another kind
/// means the app mixed them up, and a push would go to the wrong kind of token.
public struct DeviceService: Sendable {
    private let environment: ServiceEnvironment

    /// Creates the service.
    public init(environment: ServiceEnvironment) {
        self.environment = environment
    }

    /// What a token registration answers.
    public struct TokenRegistered: Sendable {
        /// Whether no token was stored before (for update tokens: for this device
        /// and activity).
        public let created: Bool
        /// When it was registered.
        public let registeredAt: Date
    }

    /// Registers or updates a device. Answers whether it was created, and the device
    /// as stored.
    public func register(
        appID: String, deviceID: String, _ registration: DeviceRegistration
    ) async throws(ServiceError) -> (created: Bool, device: DeviceRecord) {
        let now = environment.clock.now()
        let (created, device) = try await environment.write { session -> (Bool, DeviceRecord?) in
            if let token = registration.apnsToken {
                try Self.refuseCrossedKind(session: session, appID: appID, token: token, kind: .device, field: "apns_token")
            }
            let created = try session.upsertDevice(appID: appID, deviceID: deviceID, registration, now: now)
            return (created, try session.device(appID: appID, deviceID: deviceID))
        }
        guard let device else { throw ServiceError(.failed, "The device was not stored.") }
        return (created, device)
    }

    /// Stores a device's push-to-start token for an activity type.
    public func putStartToken(
        appID: String, deviceID: String, activityType: String, token: String
    ) async throws(ServiceError) -> TokenRegistered {
        let now = environment.clock.now()
        let created = try await environment.write { session -> Bool in
            let environment = try Self.registeredEnvironment(session: session, appID: appID, deviceID: deviceID)
            try Self.refuseCrossedKind(session: session, appID: appID, token: token, kind: .pushToStart, field: "token")
            return try session.upsertStartToken(
                appID: appID, deviceID: deviceID, activityType: activityType, token: token, environment: environment,
                now: now)
        }
        return TokenRegistered(created: created, registeredAt: now)
    }

    /// Removes a device's push-to-start token: remote starts of that type stop
    /// reaching it.
    public func deleteStartToken(appID: String, deviceID: String, activityType: String) async throws(ServiceError) {
        let deleted = try await environment.write {
            try $0.deleteStartToken(appID: appID, deviceID: deviceID, activityType: activityType)
        }
        guard deleted else {
            throw ServiceError(.notFound, "Device \(deviceID) holds no push-to-start token for \(activityType).")
        }
    }

    /// Registers or rotates a device's update token for an activity; an activity
    /// Islet has not seen is one the app started locally, and is created.
    public func putUpdateToken(
        appID: String, deviceID: String, activityID: String, activityType: String, token: String
    ) async throws(ServiceError) -> TokenRegistered {
        let now = environment.clock.now()
        let lifecycle = environment.lifecycle
        let created = try await environment.write { session -> Bool in
            // The device, the token's other kinds and the activity, read together.
            let checks = try session.updateTokenChecks(appID: appID, deviceID: deviceID, activityID: activityID, token: token)
            guard let environment = checks.environment else { throw Self.noDevice(appID: appID, deviceID: deviceID) }
            try Self.refuseCrossedKind(checks.otherKinds, kind: .liveActivityUpdate, field: "token")
            // An activity Islet has not seen is one the app started locally: added
            // unless another request (on any node) adds it first, whose activity is
            // then read locked and checked like any other. One just added has no
            // copies yet, and nothing to check.
            var found = checks.activity
            var added = false
            if found == nil {
                if let inserted = try session.insertLocalActivity(
                    appID: appID, activityID: activityID, activityType: activityType, now: now)
                {
                    found = inserted
                    added = true
                } else {
                    found = try session.lockedActivity(appID: appID, activityID: activityID)
                }
            }
            if let activity = found, !added {
                guard activity.activityType == activityType else {
                    throw ServiceError.invalid(
                        "Activity \(activityID) is of type \(activity.activityType).", field: "activity_type",
                        "must be \(activity.activityType), the type the activity has")
                }
                switch lifecycle.check(.registerToken, status: activity.status, startedAt: activity.startedAt, now: now) {
                case .allowed:
                    break
                case .ended, .expired:
                    throw ServiceError(
                        .conflict,
                        "Activity \(activityID) has ended; an ended activity takes no new update tokens and can never be updated again.")
                case .pastUpdateWindow(let since):
                    throw ServiceError(
                        .conflict,
                        "Activity \(activityID) is past its update window (since \(RFC3339.string(since))); it can only be ended.")
                }
                if let instance = try session.instance(appID: appID, activityID: activityID, deviceID: deviceID),
                    instance.status == .ended
                {
                    throw ServiceError(
                        .conflict, "Device \(deviceID) has ended activity \(activityID); its copy can never be updated again.")
                }
            }
            let before = added ? nil : try session.instance(appID: appID, activityID: activityID, deviceID: deviceID)
            let created = try session.registerUpdateToken(
                appID: appID, activityID: activityID, deviceID: deviceID, token: token, environment: environment, now: now)
            var events: [NewEvent] = []
            if added {
                events.append(NewEvent(
                    appID: appID, type: .activityStarted, activityID: activityID, occurredAt: now,
                    data: [
                        "activity_id": .string(activityID), "activity_type": .string(activityType), "origin": "device",
                        "targets": 1,
                    ]))
            }
            events.append(NewEvent(
                appID: appID, type: .activityTokenRegistered, activityID: activityID, occurredAt: now,
                data: [
                    "activity_id": .string(activityID), "device_id": .string(deviceID),
                    "answered_start": .bool(before?.status == .pending && before?.updateToken == nil),
                    "rotated": .bool(!created),
                ]))
            try session.appendEvents(events)
            return created
        }
        return TokenRegistered(created: created, registeredAt: now)
    }

    /// The device ended the activity locally: its copy ends. Answers the copy.
    public func endOnDevice(appID: String, deviceID: String, activityID: String) async throws(ServiceError) -> InstanceRecord {
        let now = environment.clock.now()
        return try await environment.write { session -> InstanceRecord in
            guard try session.instance(appID: appID, activityID: activityID, deviceID: deviceID) != nil else {
                throw ServiceError(.notFound, "Device \(deviceID) holds no activity \(activityID).")
            }
            try session.endInstance(appID: appID, activityID: activityID, deviceID: deviceID, cause: .device, at: now)
            guard let instance = try session.instance(appID: appID, activityID: activityID, deviceID: deviceID) else {
                throw ServiceError(.notFound, "Device \(deviceID) holds no activity \(activityID).")
            }
            return instance
        }
    }

    // MARK: - Rules

    /// The environment of a registered device, or `notFound`.
    private static func registeredEnvironment(
        session: any StoreSession, appID: String, deviceID: String
    ) throws -> APNsEnvironment {
        guard let environment = try session.deviceEnvironment(appID: appID, deviceID: deviceID) else {
            throw noDevice(appID: appID, deviceID: deviceID)
        }
        return environment
    }

    /// The refusal of a token for a device not registered.
    private static func noDevice(appID: String, deviceID: String) -> ServiceError {
        ServiceError(
            .notFound, "There is no device \(deviceID); register it with PUT /v1/apps/\(appID)/devices/\(deviceID) first.")
    }

    /// Refuses a token already registered under another kind.
    static func refuseCrossedKind(
        session: any StoreSession, appID: String, token: String, kind: PushTokenKind, field: String
    ) throws {
        try refuseCrossedKind(try session.registeredKinds(appID: appID, token: token, except: kind), kind: kind, field: field)
    }

    /// Refuses a token registered under `others`, kinds other than `kind`.
    static func refuseCrossedKind(_ others: Set<PushTokenKind>, kind: PushTokenKind, field: String) throws {
        guard let other = others.sorted(by: { $0.rawValue < $1.rawValue }).first else { return }
        throw ServiceError.invalid(
            "This token is already registered as a \(other.rawValue) token; the three kinds of token never mix.",
            field: field, "is a \(other.rawValue) token, not a \(kind.rawValue) token")
    }
}
