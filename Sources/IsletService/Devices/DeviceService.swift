public import Foundation
import IsletCore
public import Storage

/// Devices and the tokens they give: the ordinary device token (with the device's
/// registration), push-to-start tokens per activity type, and update tokens per
/// activity. A token is stored under one kind only: the same text as another kind
/// means the app mixed them up, and a push would go to the wrong kind of token.
/// Every request for a registered device is checked against the device's secret
/// (``DeviceSecrets``) in the transaction that acts on it.
public struct DeviceService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = DeviceStore & ActivityStore & EventStore & PushHistory & IdempotencyStore & ReceiptStore

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

    /// What a device registration answers.
    public struct Registered: Sendable {
        /// Whether the device was created.
        public let created: Bool
        /// The device as stored.
        public let device: DeviceRecord
        /// The device's new secret, shown this once: issued when the device is
        /// created and, under `device_secrets: off`, to a registration that did not
        /// carry the device's current secret while no request has ever carried it
        /// (the old one stops working). A secret a device has used is kept.
        public let secret: String?
        /// Whether this answers a retry with the `Idempotency-Key` of an earlier
        /// registration: as that one was answered, with the same secret.
        public var replayed = false
    }

    /// Registers or updates a device; `secret` is what the request carried in
    /// `Islet-Device-Secret`. A new device is given a secret; a registered one is
    /// changed only with its secret when its app requires secrets (see
    /// ``DeviceSecrets``), and its secret is replaced (under `off`) only while no
    /// request has carried it.
    public func register(
        appID: String, deviceID: String, secret: String?, _ registration: DeviceRegistration,
        idempotency: IdempotencyKey? = nil
    ) async throws(ServiceError) -> Registered {
        if let idempotency, !IdempotencyKey.isWellFormed(idempotency.key) {
            throw ServiceError.invalid(
                "The Idempotency-Key header must be 1 to 255 visible ASCII characters.", field: IdempotencyKey.field,
                "must be 1 to 255 visible ASCII characters")
        }
        let now = environment.clock.now()
        let fresh = try newSecret()
        let freshHash = DeviceSecrets.hash(fresh)
        // A key is the device's own: another device's registration never answers it.
        let scopedKey = idempotency.map { "device:\(deviceID):\($0.key)" }
        let since = now.addingTimeInterval(-environment.idempotencyWindow)
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await environment.store.write { (session: any Stores) -> Registered in
                    if let idempotency, let scopedKey,
                        let earlier = try session.idempotentAnswer(appID: appID, key: scopedKey, since: since)
                    {
                        return try Self.replay(earlier, idempotency: idempotency, session: session, appID: appID, deviceID: deviceID)
                    }
                    let registered = try Self.register(
                        session: session, appID: appID, deviceID: deviceID, secret: secret, registration, fresh: fresh,
                        freshHash: freshHash, now: now)
                    if let idempotency, let scopedKey {
                        var kept: [String: JSONValue] = ["created": .bool(registered.created)]
                        if let secret = registered.secret { kept["device_secret"] = .string(secret) }
                        try session.saveIdempotentAnswer(
                            appID: appID, key: scopedKey,
                            IdempotentAnswer(
                                requestHash: idempotency.fingerprint, status: registered.created ? 201 : 200,
                                body: Data(JSONValue.object(kept).jsonText.utf8), createdAt: now, sealed: true),
                            replacingBefore: since)
                    }
                    return registered
                }
            } catch let error as StoreError where error.code == .conflict && idempotency != nil && attempt == 1 {
                // A registration with the same key committed meanwhile: answered as it was.
                continue
            } catch let error as ServiceError {
                throw error
            } catch {
                throw environment.domainError(error)
            }
        }
    }

    /// The answer of an earlier registration with the same `Idempotency-Key`: the
    /// device as it is now, created and secret as they were answered.
    private static func replay(
        _ earlier: IdempotentAnswer, idempotency: IdempotencyKey, session: any Stores, appID: String, deviceID: String
    ) throws -> Registered {
        guard earlier.requestHash == idempotency.fingerprint else {
            throw ServiceError.invalid(
                "The Idempotency-Key \(idempotency.key) was used with a different request; use a new key for a new request.",
                field: IdempotencyKey.field, "was used with a different request")
        }
        guard let kept = try? JSONValue(parsing: earlier.body), let created = kept["created"]?.boolValue,
            let device = try session.device(appID: appID, deviceID: deviceID)
        else {
            throw StoreError(.corrupt, "the stored answer of a device registration does not parse")
        }
        var registered = Registered(created: created, device: device, secret: kept["device_secret"]?.stringValue)
        registered.replayed = true
        return registered
    }

    /// Registers or updates the device in `session` (see `register(appID:deviceID:secret:_:idempotency:)`).
    private static func register(
        session: any Stores, appID: String, deviceID: String, secret: String?, _ registration: DeviceRegistration,
        fresh: String, freshHash: Data, now: Date
    ) throws -> Registered {
        // The insert decides creation atomically (another node may create the
        // device at the same moment); a device that exists is changed only once
        // its secret is checked, under the lock of its row.
        let created = try session.insertDevice(appID: appID, deviceID: deviceID, registration, secretHash: freshHash, now: now)
        var issued = created
        if !created {
            let access = try session.deviceAccess(appID: appID, deviceID: deviceID, exclusive: true)
            let current = try Self.checkSecret(
                access, session: session, presented: secret, appID: appID, deviceID: deviceID, now: now)
            // Under `off`, a registration without the secret gets a new one,
            // unless the device has used its secret: then it keeps it, and the
            // registration gets none.
            issued = !current && !access.secretPresented
            // A device is one platform for good: its tokens are of one kind.
            if let existing = try session.device(appID: appID, deviceID: deviceID),
                existing.platform != registration.platform
            {
                throw ServiceError(
                    .conflict,
                    "Device \(deviceID) is an \(existing.platform) device; a device is one platform (register the other as another device).",
                    fields: [ServiceError.FieldError(field: "platform", message: "must stay \(existing.platform)")])
            }
        }
        if let token = registration.apnsToken {
            try Self.refuseCrossedKind(session: session, appID: appID, token: token, kind: .device, field: "apns_token")
        }
        if !created {
            try session.updateDevice(appID: appID, deviceID: deviceID, registration, now: now)
            if issued {
                _ = try session.replaceDeviceSecret(appID: appID, deviceID: deviceID, secretHash: freshHash, presentedAt: nil)
            }
        }
        guard let device = try session.device(appID: appID, deviceID: deviceID) else {
            throw ServiceError(.failed, "The device was not stored.")
        }
        return Registered(created: created, device: device, secret: issued ? fresh : nil)
    }

    /// Stores a device's push-to-start token for an activity type.
    public func putStartToken(
        appID: String, deviceID: String, secret: String?, activityType: String, token: String
    ) async throws(ServiceError) -> TokenRegistered {
        let now = environment.clock.now()
        let created = try await environment.write { (session: any Stores) -> Bool in
            let environment = try Self.admittedEnvironment(
                session: session, appID: appID, deviceID: deviceID, secret: secret, now: now)
            try Self.refuseCrossedKind(session: session, appID: appID, token: token, kind: .pushToStart, field: "token")
            return try session.upsertStartToken(
                appID: appID, deviceID: deviceID, activityType: activityType, token: token, environment: environment,
                now: now)
        }
        return TokenRegistered(created: created, registeredAt: now)
    }

    /// Removes a device's push-to-start token: remote starts of that type stop
    /// reaching it.
    public func deleteStartToken(
        appID: String, deviceID: String, secret: String?, activityType: String
    ) async throws(ServiceError) {
        let now = environment.clock.now()
        let deleted = try await environment.write { (session: any Stores) -> Bool in
            try Self.admit(session: session, appID: appID, deviceID: deviceID, secret: secret, now: now)
            return try session.deleteStartToken(appID: appID, deviceID: deviceID, activityType: activityType)
        }
        guard deleted else {
            throw ServiceError(.notFound, "Device \(deviceID) holds no push-to-start token for \(activityType).")
        }
    }

    /// Registers or rotates a device's update token for an activity; an activity
    /// Islet has not seen is one the app started locally, and is created.
    /// An android device joins the activity without a token (`token` nil): FCM
    /// reaches its own, and its copy is active at once.
    ///
    /// Who may follow the activity: a device its start targeted (it holds a copy
    /// already), or one its join audience takes in, when the backend started it
    /// under `join: audience`; any device when it started it under `anyone`. One
    /// devices created themselves goes by the app's `local_join`, read in the same
    /// transaction. Any other device is `forbidden`, naming `activity_id`, and
    /// nothing is stored.
    public func putUpdateToken(
        appID: String, deviceID: String, secret: String?, activityID: String, activityType: String, token: String?
    ) async throws(ServiceError) -> TokenRegistered {
        let now = environment.clock.now()
        let lifecycle = environment.lifecycle
        let created = try await environment.write { (session: any Stores) -> Bool in
            // The device, the token's other kinds and the activity, read together.
            let checks = try session.updateTokenChecks(
                appID: appID, deviceID: deviceID, activityID: activityID, token: token ?? "")
            guard let environment = checks.environment else { throw Self.noDevice(appID: appID, deviceID: deviceID) }
            try Self.checkSecret(checks.device, session: session, presented: secret, appID: appID, deviceID: deviceID, now: now)
            let isAndroid = checks.device.platform == DevicePlatform.android.rawValue
            if token != nil || !isAndroid {
                try Self.refuseAndroid(checks.device, deviceID: deviceID)
            }
            guard isAndroid || token != nil else {
                throw ServiceError.invalid(
                    "The field token is required: an iOS device joins an activity with its update token.", field: "token",
                    "is required of an ios device (an android device joins without one)")
            }
            if token != nil {
                try Self.refuseCrossedKind(checks.otherKinds, kind: .liveActivityUpdate, field: "token")
            }
            // An activity Islet has not seen is one the app started locally: added
            // unless another request (on any node) adds it first, whose activity is
            // then read locked and checked like any other. One just added has no
            // copies yet, and nothing to check.
            var found = checks.activity
            var added = false
            var before: CopyRecord?
            if found == nil {
                if let inserted = try session.insertLocalActivity(
                    appID: appID, activityID: activityID, activityType: activityType, createdBy: deviceID, now: now)
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
                before = try session.copy(appID: appID, activityID: activityID, deviceID: deviceID)
                if before?.status == .ended {
                    throw ServiceError(
                        .conflict, "Device \(deviceID) has ended activity \(activityID); its copy can never be updated again.")
                }
                if before == nil {
                    try Self.admitFollower(activity, appID: appID, deviceID: deviceID, access: checks.device, session: session)
                }
            }
            let created: Bool
            if let token {
                created = try session.registerUpdateToken(
                    appID: appID, activityID: activityID, deviceID: deviceID, token: token, environment: environment, now: now)
            } else {
                created = try session.insertAndroidCopies(
                    appID: appID, activityID: activityID, deviceIDs: [deviceID], now: now) > 0
            }
            // A copy the start did not make is one the device joined on its own.
            if before == nil { try session.markJoined(appID: appID, activityID: activityID, deviceID: deviceID) }
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
                    "rotated": .bool(!created && token != nil), "platform": .string(isAndroid ? "android" : "ios"),
                ]))
            try session.appendEvents(events)
            return created
        }
        return TokenRegistered(created: created, registeredAt: now)
    }

    /// The device ended the activity locally: its copy ends. Answers the copy.
    public func endOnDevice(
        appID: String, deviceID: String, secret: String?, activityID: String
    ) async throws(ServiceError) -> CopyRecord {
        let now = environment.clock.now()
        return try await environment.write { (session: any Stores) -> CopyRecord in
            try Self.admit(session: session, appID: appID, deviceID: deviceID, secret: secret, now: now)
            guard try session.copy(appID: appID, activityID: activityID, deviceID: deviceID) != nil else {
                throw ServiceError(.notFound, "Device \(deviceID) holds no activity \(activityID).")
            }
            try session.endCopy(appID: appID, activityID: activityID, deviceID: deviceID, cause: .device, at: now)
            guard let instance = try session.copy(appID: appID, activityID: activityID, deviceID: deviceID) else {
                throw ServiceError(.notFound, "Device \(deviceID) holds no activity \(activityID).")
            }
            return instance
        }
    }

    /// What a tap answers: the push it was attributed to (`nil` when none was
    /// sent to the device for the activity yet) and when it happened.
    public struct Tapped: Sendable, Equatable {
        /// The `apns-id` of the push the tap counts on.
        public let apnsID: String?
        /// When the tap happened.
        public let tappedAt: Date
    }

    /// How far a device's clock may be off the server's when it dates a tap: a tap
    /// may be dated this much ahead of the server's clock, or before the push it
    /// counts on was sent.
    public static let tapClockSkew: TimeInterval = 300

    /// Records a tap on the device's copy of an activity (the app learns of it from
    /// the URL its widget opened), at `tappedAt` (now when not given), counted on
    /// the push `apnsID` or, without one, on the newest push sent to the copy by
    /// then; an `activity.tapped` event says so. The same tap reported again (same
    /// time, same push), however often and in whatever order, is answered alike and
    /// counted once. A tap dated before its activity started, or before the push it
    /// names was sent, is refused.
    public func recordTap(
        appID: String, deviceID: String, secret: String?, activityID: String, apnsID: String?, tappedAt: Date?
    ) async throws(ServiceError) -> Tapped {
        let now = environment.clock.now()
        let at = tappedAt ?? now
        let skew = Self.tapClockSkew
        // apns-ids are UUIDs, which Islet writes in lower case (as APNs documents
        // them); a client may write one in upper case.
        let named = apnsID?.lowercased()
        let tapped = try await environment.write { (session: any Stores) -> String? in
            try Self.admit(session: session, appID: appID, deviceID: deviceID, secret: secret, now: now)
            guard try session.copy(appID: appID, activityID: activityID, deviceID: deviceID) != nil,
                let activity = try session.activity(appID: appID, activityID: activityID)
            else {
                throw ServiceError(.notFound, "Device \(deviceID) holds no activity \(activityID).")
            }
            if at.timeIntervalSince(now) > skew {
                throw ServiceError.invalid(
                    "The tap is dated ahead of the server's clock.", field: "tapped_at",
                    "must not be more than \(Int(skew)) seconds ahead of the server's clock (\(RFC3339.string(now)))")
            }
            if activity.startedAt.timeIntervalSince(at) > skew {
                throw ServiceError.invalid(
                    "The tap is dated before activity \(activityID) started.", field: "tapped_at",
                    "must not be more than \(Int(skew)) seconds before the activity started (\(RFC3339.string(activity.startedAt)))")
            }
            let tapped = try session.recordTap(
                appID: appID, activityID: activityID, deviceID: deviceID, apnsID: named, at: at,
                sentBy: at.addingTimeInterval(skew))
            guard let tapped else {
                throw ServiceError.invalid(
                    "No push \(named ?? "") was made for device \(deviceID)'s copy of activity \(activityID).", field: "apns_id",
                    "must be the apns-id of a push made for this device's copy of the activity, or absent")
            }
            // A push cannot be tapped before it arrived (this refusal undoes the
            // tap recorded above, with the rest of the transaction).
            if let arrived = tapped.pushArrivedFrom, arrived.timeIntervalSince(at) > skew {
                throw ServiceError.invalid(
                    "The tap is dated before push \(tapped.apnsID ?? "") was sent.", field: "tapped_at",
                    "must not be more than \(Int(skew)) seconds before the push it counts on was sent (\(RFC3339.string(arrived)))")
            }
            // The same tap reported again is answered again, and not counted twice.
            if !tapped.counted { return tapped.apnsID }
            try session.appendEvents([NewEvent(
                appID: appID, type: .activityTapped, activityID: activityID, occurredAt: now,
                data: [
                    "activity_id": .string(activityID), "device_id": .string(deviceID),
                    "apns_id": tapped.apnsID.map { .string($0) } ?? .null, "tapped_at": .string(RFC3339.string(at)),
                ])])
            return tapped.apnsID
        }
        return Tapped(apnsID: tapped, tappedAt: at)
    }

    // MARK: - Receipts

    /// What a receipt answers: the send the device showed, and when.
    public struct Received: Sendable, Equatable {
        /// The send's id, as its content state carried it.
        public let sendID: String
        /// When the device showed it.
        public let receivedAt: Date
    }

    /// How far ahead of the server's clock a device may date a receipt.
    public static let receiptClockSkew: TimeInterval = 300

    /// Records that the device's copy of an activity showed send `sendID` (the id
    /// its content state carried under `islet`) at `receivedAt` (now when not
    /// given): the send counts it, the copy keeps its newest, and
    /// `activity.received` says so. The same receipt again is answered alike and
    /// counted once. A send of another activity, or none, is refused naming
    /// `send_id`; a device without a copy of the activity is `notFound`.
    public func recordReceipt(
        appID: String, deviceID: String, secret: String?, activityID: String, sendID: String, receivedAt: Date?
    ) async throws(ServiceError) -> Received {
        let now = environment.clock.now()
        let at = receivedAt ?? now
        let skew = Self.receiptClockSkew
        let unknown = ServiceError.invalid(
            "No send \(sendID) was made for activity \(activityID).", field: "send_id",
            "must be the send_id a push of this activity carried")
        let stored = try await environment.write { (session: any Stores) -> StoredReceipt in
            try Self.admit(session: session, appID: appID, deviceID: deviceID, secret: secret, now: now)
            guard try session.copy(appID: appID, activityID: activityID, deviceID: deviceID) != nil else {
                throw ServiceError(.notFound, "Device \(deviceID) holds no activity \(activityID).")
            }
            // Islet names its sends by decimal ids from 1.
            guard let id = Int64(sendID), id > 0, String(id) == sendID else { throw unknown }
            if at.timeIntervalSince(now) > skew {
                throw ServiceError.invalid(
                    "The receipt is dated ahead of the server's clock.", field: "received_at",
                    "must not be more than \(Int(skew)) seconds ahead of the server's clock (\(RFC3339.string(now)))")
            }
            guard let stored = try session.recordReceipt(
                appID: appID, activityID: activityID, deviceID: deviceID, sendID: id, receivedAt: at, now: now)
            else { throw unknown }
            if stored.counted {
                try session.appendEvents([NewEvent(
                    appID: appID, type: .activityReceived, activityID: activityID, occurredAt: now,
                    data: [
                        "activity_id": .string(activityID), "device_id": .string(deviceID), "send_id": .string(sendID),
                        "received_at": .string(RFC3339.string(at)),
                    ])])
            }
            return stored
        }
        if stored.counted { environment.receiptMetrics.recorded(appID: appID) }
        return Received(sendID: sendID, receivedAt: stored.receivedAt)
    }

    // MARK: - Secrets

    /// Replaces a device's secret, given its current one (whatever the app's
    /// setting): the old one stops working. Answers the new secret, shown once.
    public func rotateSecret(appID: String, deviceID: String, secret: String?) async throws(ServiceError) -> String {
        let fresh = try newSecret()
        let freshHash = DeviceSecrets.hash(fresh)
        let now = environment.clock.now()
        try await environment.write { (session: any Stores) in
            let access = try session.deviceAccess(appID: appID, deviceID: deviceID, exclusive: true)
            guard access.deviceExists else { throw Self.noDevice(appID: appID, deviceID: deviceID) }
            try DeviceSecrets.requireCurrent(access.secretHash, presented: secret, appID: appID, deviceID: deviceID)
            // The device used its secret to ask for this one: it keeps it.
            _ = try session.replaceDeviceSecret(appID: appID, deviceID: deviceID, secretHash: freshHash, presentedAt: now)
        }
        environment.logger.info("device secret rotated", ("app", .string(appID)), ("device", .string(deviceID)))
        return fresh
    }

    /// Gives a device a new secret without its old one (the app's backend, for
    /// support: a device that lost its secret, or registered before it had one).
    /// Answers the new secret, shown once; the old one stops working.
    public func resetSecret(appID: String, deviceID: String) async throws(ServiceError) -> String {
        let fresh = try newSecret()
        let freshHash = DeviceSecrets.hash(fresh)
        let found = try await environment.write { (session: any Stores) in
            try session.replaceDeviceSecret(appID: appID, deviceID: deviceID, secretHash: freshHash, presentedAt: nil)
        }
        guard found else { throw Self.noDevice(appID: appID, deviceID: deviceID) }
        environment.logger.notice("device secret reset", ("app", .string(appID)), ("device", .string(deviceID)))
        return fresh
    }

    private func newSecret() throws(ServiceError) -> String {
        do {
            return try DeviceSecrets.generate()
        } catch {
            throw environment.domainError(error)
        }
    }

    // MARK: - Rules

    /// Checks the secret of a request for a device, if the device is registered
    /// (a route for a device that is not answers as it always did). The device
    /// stays locked, shared, until the transaction ends.
    private static func admit(session: any DeviceStore, appID: String, deviceID: String, secret: String?, now: Date) throws {
        let access = try session.deviceAccess(appID: appID, deviceID: deviceID, exclusive: false)
        if access.deviceExists {
            try checkSecret(access, session: session, presented: secret, appID: appID, deviceID: deviceID, now: now)
        }
    }

    /// Checks a request for a registered device (``DeviceSecrets/check(_:presented:appID:deviceID:)``)
    /// and records the first that carried the device's secret: from then on a
    /// registration without it never replaces it. Answers whether it carried it.
    @discardableResult
    static func checkSecret(
        _ access: DeviceAccess, session: any DeviceStore, presented: String?, appID: String, deviceID: String, now: Date
    ) throws -> Bool {
        let current = try DeviceSecrets.check(access, presented: presented, appID: appID, deviceID: deviceID)
        // Once per device. On PostgreSQL two first requests at once, each holding
        // the row shared, meet in a deadlock; the store runs the one rolled back
        // again, and it finds the record made.
        if current, !access.secretPresented {
            try session.recordDeviceSecretPresented(appID: appID, deviceID: deviceID, at: now)
        }
        return current
    }

    /// The environment of a registered device whose secret the request carried
    /// (when its app requires one), or `notFound`.
    private static func admittedEnvironment(
        session: any DeviceStore, appID: String, deviceID: String, secret: String?, now: Date
    ) throws -> APNsEnvironment {
        let access = try session.deviceAccess(appID: appID, deviceID: deviceID, exclusive: false)
        guard let environment = access.environment else { throw noDevice(appID: appID, deviceID: deviceID) }
        try checkSecret(access, session: session, presented: secret, appID: appID, deviceID: deviceID, now: now)
        try refuseAndroid(access, deviceID: deviceID)
        return environment
    }

    /// Refuses a device that may not follow `activity` (it holds no copy of it yet).
    /// An activity the backend started under `audience` lets in the devices its
    /// join audience resolves to now; one started under `anyone` (or before the
    /// rule existed), any device. One devices created themselves goes by the app's
    /// `local_join`: under `user`, only devices of the creating device's user id
    /// (or, when it had none, that device alone). `access` is the device's, with
    /// its user id and the app's `local_join`.
    static func admitFollower(
        _ activity: ActivityRecord, appID: String, deviceID: String, access: DeviceAccess, session: any ActivityStore
    ) throws {
        let activityID = activity.activityID
        let admitted: Bool
        let why: String
        switch activity.origin {
        case .remote:
            guard activity.join == .audience else { return }
            admitted = try session.inJoinAudience(appID: appID, activityID: activityID, deviceID: deviceID)
            why = "was started for an audience this device is not in (the backend can widen it)"
        case .local:
            guard access.localJoin == .user, let creator = activity.createdBy, creator != deviceID else { return }
            admitted = activity.creatorUserID != nil && access.userID == activity.creatorUserID
            why = "was created on another user's device, and the app lets only that user's devices follow it (local_join: user)"
        }
        guard !admitted else { return }
        throw ServiceError(
            .forbidden, "Device \(deviceID) may not follow activity \(activityID): it \(why).",
            fields: [ServiceError.FieldError(field: "activity_id", message: "names an activity this device may not follow")])
    }

    /// An Android device has no APNs tokens: FCM reaches its own.
    static func refuseAndroid(_ access: DeviceAccess, deviceID: String) throws(ServiceError) {
        guard access.platform == DevicePlatform.android.rawValue else { return }
        throw ServiceError(
            .conflict, "Device \(deviceID) is an android device: it has no APNs tokens (FCM reaches its fcm_token).",
            fields: [ServiceError.FieldError(field: "token", message: "is an APNs token; an android device has none")])
    }

    /// The refusal of a token for a device not registered.
    private static func noDevice(appID: String, deviceID: String) -> ServiceError {
        ServiceError(
            .notFound, "There is no device \(deviceID); register it with PUT /v1/apps/\(appID)/devices/\(deviceID) first.")
    }

    /// Refuses a token already registered under another kind.
    static func refuseCrossedKind(
        session: any DeviceStore, appID: String, token: String, kind: PushTokenKind, field: String
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
