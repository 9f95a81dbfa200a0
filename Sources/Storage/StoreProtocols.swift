public import Foundation
public import IsletCore

// The storage boundary: what the domain services and the delivery worker may ask of
// a database, one protocol per concern. A backend implements every protocol on its
// session type (`StoreSession`) and the transactions on its store type (`Store`);
// nothing above this file knows which backend it talks to.

/// Apps: their identity, settings, APNs credentials and key hashes.
public protocol AppStore {
    /// Adds an app; `conflict` when the id is taken.
    func insertApp(_ app: AppRecord) throws
    /// Replaces an app's name, bundle id, credentials, settings and key hashes.
    func updateApp(_ app: AppRecord) throws
    /// Replaces an app's name, bundle id, credentials and settings, leaving its keys.
    func updateAppSettings(_ app: AppRecord) throws
    /// Replaces an app's two key hashes. Answers whether the app exists.
    func replaceKeys(appID: String, serverKeyHash: Data, deviceKeyHash: Data, now: Date) throws -> Bool
    /// The app `id`.
    func app(id: String) throws -> AppRecord?
    /// The app whose server or device key hashes to `hash`, and which key it is.
    func app(keyHash hash: Data) throws -> (app: AppRecord, kind: AppKeyKind)?
    /// Every app, oldest first.
    func apps() throws -> [AppRecord]
}

/// Devices, their ordinary tokens and their push-to-start tokens, and the
/// audiences that name them.
public protocol DeviceStore {
    /// The device `deviceID` of `appID`.
    func device(appID: String, deviceID: String) throws -> DeviceRecord?
    /// Adds a device with its first registration and the hash of its secret, unless
    /// it exists (then nothing changes), atomically. Answers whether it was added.
    func insertDevice(
        appID: String, deviceID: String, _ registration: DeviceRegistration, secretHash: Data?, now: Date
    ) throws -> Bool
    /// Changes a registered device by `registration` (what it leaves nil stays),
    /// never its secret.
    func updateDevice(appID: String, deviceID: String, _ registration: DeviceRegistration, now: Date) throws
    /// What a device route checks its caller against: the app's `device_secrets`
    /// setting, and the device's environment and secret hash, the device locked
    /// until the transaction ends (`exclusive` for a change of the device or its
    /// secret; else shared, so that its secret cannot change under the request).
    /// A locking read: only in a write transaction.
    func deviceAccess(appID: String, deviceID: String, exclusive: Bool) throws -> DeviceAccess
    /// Replaces the hash of a device's secret; `presentedAt` says when a request
    /// carried it (a rotation: the old one), `nil` when none did yet. Answers
    /// whether the device exists.
    func replaceDeviceSecret(appID: String, deviceID: String, secretHash: Data, presentedAt: Date?) throws -> Bool
    /// Records that a request carried the device's current secret, at `at`, unless
    /// one did before (see ``DeviceAccess/secretPresented``).
    func recordDeviceSecretPresented(appID: String, deviceID: String, at: Date) throws
    /// The kinds other than `except` under which `token` is registered anywhere in
    /// the app.
    func registeredKinds(appID: String, token: String, except: PushTokenKind?) throws -> Set<PushTokenKind>
    /// What a device's update token for an activity is checked against, read
    /// together: the device (locked, shared, as ``deviceAccess(appID:deviceID:exclusive:)``
    /// reads it), the other kinds the token is registered under, and the activity,
    /// locked for the rest of the transaction.
    func updateTokenChecks(appID: String, deviceID: String, activityID: String, token: String) throws -> UpdateTokenChecks
    /// The environment of a registered device, or `nil` when there is no such device.
    func deviceEnvironment(appID: String, deviceID: String) throws -> APNsEnvironment?
    /// Stores the push-to-start token of one device and activity type, atomically.
    /// Answers whether none was stored before.
    func upsertStartToken(
        appID: String, deviceID: String, activityType: String, token: String, environment: APNsEnvironment, now: Date
    ) throws -> Bool
    /// Removes a device's push-to-start token for a type. Answers whether one was stored.
    func deleteStartToken(appID: String, deviceID: String, activityType: String) throws -> Bool
    /// How many registered devices `audience` names.
    func audienceSize(appID: String, audience: Audience) throws -> Int
    /// The push-to-start tokens for `activityType` of every device in `audience`.
    func startTargets(appID: String, audience: Audience, activityType: String) throws -> [PushTarget]
    /// The device tokens of every reachable device in `audience`.
    func alertTargets(appID: String, audience: Audience) throws -> [PushTarget]
    /// The FCM tokens of every reachable Android device in `audience` (a start
    /// reaches them as a data message: they need no push-to-start token).
    func androidStartTargets(appID: String, audience: Audience) throws -> [PushTarget]
    /// Deletes a push-to-start token APNs refused, unless it was registered again
    /// after `refusedAt`. Answers whether it was deleted.
    func deleteRefusedStartToken(appID: String, token: String, refusedAt: Date?) throws -> Bool
    /// Marks a device unreachable after APNs refused its device token, unless the
    /// token was registered again after `refusedAt`. Answers whether it was marked.
    func markDeviceUnreachable(appID: String, token: String, refusedAt: Date?, now: Date) throws -> Bool
    /// Marks an Android device unreachable after FCM refused its registration token,
    /// unless the token was registered again after `refusedAt`. Answers whether it
    /// was marked.
    func markAndroidDeviceUnreachable(appID: String, token: String, refusedAt: Date?, now: Date) throws -> Bool
    /// After a push reached `token` only in `environment`, records that environment
    /// wherever the token is registered.
    func correctEnvironment(appID: String, token: String, kind: PushTokenKind, environment: APNsEnvironment) throws
}

/// Activities and each device's copy of them.
public protocol ActivityStore {
    /// The activity `activityID` of `appID`.
    func activity(appID: String, activityID: String) throws -> ActivityRecord?
    /// The activity `activityID` of `appID`, locked for the rest of the transaction:
    /// another transaction that changes it (on this node or another) waits, and then
    /// reads what this one wrote. Read before every change that depends on what the
    /// activity holds (its status, its last timestamp).
    func lockedActivity(appID: String, activityID: String) throws -> ActivityRecord?
    /// Activities of `appID`, newest first.
    func activities(appID: String, filter: ActivityFilter) throws -> [ActivityRecord]
    /// Adds an activity; with `replacing`, first removes an ended one of the same id
    /// and its copies. Answers its sequence.
    @discardableResult
    func insertActivity(
        appID: String, activityID: String, activityType: String, origin: ActivityRecord.Origin,
        attributes: JSONValue?, contentState: JSONValue?, lastTimestamp: Int64?, endAt: Date?, replacing: Bool, now: Date
    ) throws -> Int64
    /// Adds an activity the app started on a device (no attributes, no state yet),
    /// unless one of that id exists: another node may add it at the same moment.
    /// Answers the activity added (locked, as the transaction's own new row), or nil
    /// when one existed.
    @discardableResult
    func insertLocalActivity(
        appID: String, activityID: String, activityType: String, createdBy deviceID: String, now: Date
    ) throws -> ActivityRecord?
    /// Sets who may follow an activity the backend started, and adds `audience` to
    /// the devices it lets in.
    func setJoin(appID: String, activityID: String, rule: JoinRule, adding audience: JoinAudience) throws
    /// Adds `audience`'s values to the devices an activity lets in. Answers how many
    /// were not listed before.
    @discardableResult
    func addJoinAudience(appID: String, activityID: String, _ audience: JoinAudience) throws -> Int
    /// The devices an activity lets in beside those its start targeted.
    func joinAudience(appID: String, activityID: String) throws -> JoinAudience
    /// Whether a device is in an activity's join audience: its id, its user id or
    /// one of its tags is listed.
    func inJoinAudience(appID: String, activityID: String, deviceID: String) throws -> Bool
    /// Adds an activity's join audience to its successor's (whose start set its rule).
    func copyJoinAudience(appID: String, from activityID: String, to successorID: String) throws
    /// Marks a device's copy as one it joined on its own.
    func markJoined(appID: String, activityID: String, deviceID: String) throws
    /// Sets when Islet ends the activity.
    func setEndAt(appID: String, activityID: String, endAt: Date) throws
    /// Activities whose end time has come and that have not ended, oldest first.
    func dueScheduledEnds(now: Date, limit: Int) throws -> [(appID: String, activityID: String)]
    /// Records an update: the new content state and timestamp.
    func recordUpdate(appID: String, activityID: String, contentState: JSONValue, timestamp: Int64, now: Date) throws
    /// Ends an activity and every copy of it not yet ended.
    func endActivity(
        appID: String, activityID: String, cause: EndCause, contentState: JSONValue?, timestamp: Int64?, at date: Date
    ) throws
    /// Ends every activity started at or before `startedBefore` that has not ended,
    /// with every copy of it, and drops its queued starts and updates. Answers the
    /// activities and the pushes dropped.
    @discardableResult
    func expireActivities(startedBefore: Date, total: TimeInterval, now: Date) throws -> ExpiredActivities
    /// Whether the activity has ended (or no longer exists).
    func activityHasEnded(appID: String, activityID: String) throws -> Bool
    /// Every device's copy of an activity, by device id.
    func copies(appID: String, activityID: String) throws -> [CopyRecord]
    /// One device's copy of an activity.
    func copy(appID: String, activityID: String, deviceID: String) throws -> CopyRecord?
    /// Adds pending copies for the devices a start goes to, made by send
    /// `startSendID` (whose windows reach them by it), if any.
    func insertPendingCopies(
        appID: String, activityID: String, targets: [PushTarget], startSendID: Int64?, now: Date
    ) throws
    /// Adds the copies of Android devices (active at once: FCM reaches the device's
    /// own token, and no update token comes). A device that has a copy keeps it.
    /// Answers how many were added. `startSendID` names the start's send, if any.
    @discardableResult
    func insertAndroidCopies(
        appID: String, activityID: String, deviceIDs: [String], startSendID: Int64?, now: Date
    ) throws -> Int
    /// Registers or rotates a device's update token for an activity, atomically.
    /// Answers whether the device had no token for it before.
    func registerUpdateToken(
        appID: String, activityID: String, deviceID: String, token: String, environment: APNsEnvironment, now: Date
    ) throws -> Bool
    /// Ends one device's copy. Answers whether it was not ended before.
    @discardableResult
    func endCopy(
        appID: String, activityID: String, deviceID: String, cause: EndCause, onlyToken: String?, at date: Date
    ) throws -> Bool
    /// Ends the copy of an activity whose update token APNs refused, unless the token
    /// was registered again after `refusedAt`. Answers whether it ended.
    func endRefusedCopy(appID: String, activityID: String, token: String, refusedAt: Date?, now: Date) throws -> Bool
    /// The update tokens of every copy of an activity that has not ended.
    func updateTargets(appID: String, activityID: String) throws -> [PushTarget]
    /// A page of those: at most `limit`, of the devices after `afterDeviceID` (from
    /// the first when nil), in device order. A fan-out reads its targets a page at a
    /// time, so that a million of them are never in memory at once.
    func updateTargets(appID: String, activityID: String, afterDeviceID: String?, limit: Int) throws -> [PushTarget]
    /// A page of the FCM tokens of the reachable Android devices whose copy of an
    /// activity has not ended, after `afterDeviceID`, in device order.
    func androidUpdateTargets(appID: String, activityID: String, afterDeviceID: String?, limit: Int) throws -> [PushTarget]
    /// Stores the alert an activity was started with (a successor starts with it).
    func setStartAlert(appID: String, activityID: String, alert: JSONValue) throws
    /// Copies whose push-to-start APNs accepted at or before `sentBefore` and that
    /// still have no update token, not yet reported: each is marked reported at
    /// `now`, so that it is answered once. Up to `limit`, oldest first.
    func claimUnconfirmedStarts(sentBefore: Date, now: Date, limit: Int) throws -> [UnconfirmedStart]
    /// Links an activity to the successor that renews it (nil when none could be
    /// started), listing the devices left without it.
    func recordRenewal(appID: String, from activityID: String, to successorID: String?, notRenewed: [String]) throws
}

/// Registered activity types and their schemas.
public protocol ActivityTypeStore {
    /// The activity type `name` of `appID`.
    func activityType(appID: String, name: String) throws -> ActivityTypeRecord?
    /// Every activity type of `appID`, by name.
    func activityTypes(appID: String) throws -> [ActivityTypeRecord]
    /// Stores (or replaces) a type, with whether it asks for receipts, atomically.
    /// Answers whether it is new.
    func putActivityType(appID: String, name: String, schema: ActivityTypeSchema, receipts: Bool, now: Date) throws -> Bool
    /// Removes a type. Answers whether it existed.
    func deleteActivityType(appID: String, name: String) throws -> Bool
    /// How many activities of a type have not ended and started after `startedAfter`.
    func runningActivities(appID: String, activityType: String, startedAfter: Date) throws -> Int
}

/// The send queue: what each send says, and who it goes to (a row per push, or
/// windows of an activity's copies), their claims and their outcomes.
public protocol PushQueue {
    /// Stores what a send says, once for all its targets. Answers its id.
    func insertSend(appID: String, activityID: String?, content: SendContent, now: Date) throws -> Int64
    /// Replaces the payload of send `sendID` before any of it went (a payload that
    /// names its own send, for receipts).
    func replaceSendPayload(sendID: Int64, payload: Data) throws
    /// Queues one push of `sendID` per target, each with its own `apns-id` from
    /// `mintID`. Answers how many.
    @discardableResult
    func enqueuePushes(
        sendID: Int64, appID: String, activityID: String?, activityType: String?, event: PushEvent,
        tokenKind: PushTokenKind, targets: [PushTarget], now: Date, mintID: () -> String
    ) throws -> Int
    /// Queues send `sendID` to the activity's copies that take `kind`
    /// (`liveActivityUpdate`: their own update tokens; `fcm`: the Android ones), by
    /// windows the worker claims: no row per device. A copy that has a row of the
    /// send already (a downgraded one) goes by its row. Answers how many copies the
    /// windows reach.
    @discardableResult
    func queueToCopies(
        sendID: Int64, appID: String, activityID: String, activityType: String?, kind: PushTokenKind, now: Date
    ) throws -> Int
    /// Stops an activity's open sends of `events`: the copies their windows had not
    /// reached are dropped with `reason` (`Superseded` marks them superseded);
    /// windows in flight finish. Answers how many pushes were dropped.
    @discardableResult
    func dropOpenSends(appID: String, activityID: String, events: [PushEvent], reason: String, now: Date) throws -> Int
    /// Records a window's push whose outcome is not the send's ordinary one (a
    /// failure, a retry, a switched environment) as a row of its own, while node
    /// `nodeID` holds the window. Answers whether it did.
    @discardableResult
    func recordWindowOutcome(_ push: ClaimedPush, _ outcome: PushOutcome, by nodeID: String, now: Date) throws -> Bool
    /// Settles a window whose pushes were all answered, while node `nodeID` holds
    /// it, in one write: the window goes, its send counts it, and a send with
    /// nothing left is finished (`send.completed`). Answers whether the node held it.
    @discardableResult
    func settleWindow(_ window: SendWindow, _ tally: WindowTally, by nodeID: String, now: Date) throws -> Bool
    /// Drops the queued updates of an activity that a newer update or end replaces.
    /// Answers those dropped.
    @discardableResult
    func supersedeQueuedUpdates(appID: String, activityID: String, now: Date) throws -> [DroppedPush]
    /// Drops an activity's queued pushes of `events`. Answers those dropped.
    @discardableResult
    func dropQueuedPushes(appID: String, activityID: String, events: [PushEvent], reason: String, now: Date) throws -> [DroppedPush]
    /// Puts pushes left in flight back in the queue, by `policy`, to be sent again
    /// with the same `apns-id`. Answers how many.
    @discardableResult
    func requeueInFlight(_ policy: InFlightPolicy, now: Date) throws -> Int
    /// Takes up to `limit` pushes that are due, oldest first, and marks them in
    /// flight under `lease`, atomically; a push another transaction is claiming is
    /// skipped, not waited for. What the queued rows leave of `limit` is filled
    /// from windows of open sends (handed back ones first). `sends` caches what
    /// each send says.
    func claimDuePushes(now: Date, limit: Int, lease: PushLease, sends: inout [Int64: SendContent]) throws -> [ClaimedPush]
    /// Extends to `until` the lease of every push `nodeID` holds in flight. Answers how
    /// many.
    @discardableResult
    func renewLeases(nodeID: String, until: Date) throws -> Int
    /// Records what became of a push, if node `nodeID` still holds it in flight.
    /// Answers whether it did: a node whose lease ran out (and whose push another
    /// node took over) records nothing. The push's rounds grow by one when the
    /// outcome has attempts (one that never reached the push service uses no round).
    @discardableResult
    func recordOutcome(pushID: Int64, _ outcome: PushOutcome, by nodeID: String, now: Date) throws -> Bool
    /// Records, in one statement, pushes APNs accepted that change nothing else (the
    /// common outcome, by far), those node `nodeID` still holds. Answers the ids of
    /// those recorded.
    @discardableResult
    func recordSent(_ pushes: [SentPush], by nodeID: String, now: Date) throws -> Set<Int64>
    /// The earliest time a queued push is due, if any is queued.
    func nextDueTime() throws -> Date?
    /// Pushes waiting to be sent or in flight.
    func queueDepth() throws -> Int
}

/// What happened to the pushes: read by the API, the dashboard, budgets and start
/// spacing. A push of a send's window has no row: it is told from its send and
/// the copy, and given a row only when a tap needs one.
public protocol PushHistory {
    /// Every push made for an activity since `since`, oldest first.
    func pushes(appID: String, activityID: String, since: Date) throws -> [PushHistoryItem]
    /// Counts a tap on the activity `activityID` of device `deviceID`, at `at`, on the
    /// push `apnsID` made for that copy (any status: a tap shows it arrived) or,
    /// without one, on the newest push sent to it by `sentBy` (none: the tap counts
    /// on no push). The push's taps rise by one and its first tap is the earliest
    /// reported, unless the same tap (the same push, the same `at`) was counted
    /// before, however long ago. Answers the tap; `nil` when no push of the copy has
    /// the `apnsID` named, and nothing changes.
    func recordTap(
        appID: String, activityID: String, deviceID: String, apnsID: String?, at: Date, sentBy: Date
    ) throws -> RecordedTap?
    /// Priority-10 updates of an activity sent since `since`: the most any copy of
    /// it was sent.
    func priority10Sends(appID: String, activityID: String, since: Date) throws -> Int
    /// Each copy's use of its priority-10 budget since `since` (priority-10 updates
    /// sent to it, none downgraded, dropped or failed), by device id: the copies of
    /// devices after `afterDeviceID` and up to `throughDeviceID` (either `nil`: no
    /// bound on that side).
    func priority10Usage(
        appID: String, activityID: String, since: Date, afterDeviceID: String?, throughDeviceID: String?
    ) throws -> [String: BudgetUsage]
    /// When each start push of `deviceIDs` goes or went (the time it was made, or the
    /// one it was deferred to), of those after `since` that were not dropped and
    /// did not fail, by device id.
    func startTimes(appID: String, deviceIDs: [String], since: Date) throws -> [String: [Date]]
    /// The activity's newest `limit` sends, newest first, with what they came to.
    func sendSummaries(appID: String, activityID: String, limit: Int) throws -> [SendSummary]
    /// The activity's sends before send `beforeSendID` (`nil`: the newest), newest
    /// first, at most `limit`, each with its payload and what it came to.
    func sendTimeline(appID: String, activityID: String, beforeSendID: Int64?, limit: Int) throws -> [SendTimelineEntry]
    /// What the app's sends made from `from` (inclusive) to `to` (exclusive) came
    /// to, in buckets of `bucketSeconds` (at least 1) from `from`; taps by when
    /// they were made.
    func overview(appID: String, from: Date, to: Date, bucketSeconds: Int64) throws -> AppOverview
    /// The app's records `text` names: an activity or device by its id, devices by
    /// user id, pushes by apns-id or apns-unique-id (each exactly), and devices and
    /// copies whose token begins with `text` when it is lowercase hex; at most
    /// `limit` of each kind.
    func lookup(appID: String, text: String, limit: Int) throws -> LookupResult
    /// The device `deviceID` with its push-to-start tokens, its newest `limit`
    /// copies and its newest `limit` pushes with rows; `nil` when there is no such
    /// device.
    func deviceHistory(appID: String, deviceID: String, limit: Int) throws -> DeviceHistory?
    /// The app's devices after `afterDeviceID` (`nil`: from the first), by id, at
    /// most `limit`.
    func devices(appID: String, afterDeviceID: String?, limit: Int) throws -> [DeviceRecord]
    /// The app's push rows `filter` keeps, newest first, before row `beforeID`
    /// (`nil`: from the newest), at most `limit`; by the sends' time index.
    func pushRows(appID: String, filter: PushRowFilter, beforeID: Int64?, limit: Int) throws -> [DeviceHistory.Push]
}

/// The Islet nodes sharing the database.
public protocol NodeStore {
    /// Records that `nodeID`, started at `startedAt`, is alive at `now`.
    func recordHeartbeat(nodeID: String, startedAt: Date, now: Date) throws
    /// Every node seen since `since`, by id, with how many pushes each holds.
    func nodes(seenSince since: Date) throws -> [NodeRecord]
    /// Records that `nodeID` stopped cleanly at `at` (its next heartbeat, when it
    /// starts again, clears it).
    func recordNodeStopped(nodeID: String, at: Date) throws
    /// Forgets nodes not seen since `before`. Answers how many.
    @discardableResult
    func forgetNodes(seenBefore before: Date) throws -> Int
}

extension NodeRecord {
    /// How long a node that stopped beating is still listed, and then forgotten:
    /// a day.
    public static let memory: TimeInterval = 24 * 3600
}

/// Work shared by the nodes of one database.
public protocol NodeCoordination {
    /// Takes, until the transaction ends, the periodic job `name` (expiring
    /// activities, scheduled ends): true when no other node's transaction holds it
    /// now, and the job is this transaction's to run. Another node that asks at the
    /// same time is answered false and skips its turn; a node that dies lets it go.
    func claimPeriodicJob(_ name: String) throws -> Bool
    /// Tells every node of the database, once this transaction commits, of `notice`.
    func notifyNodes(_ notice: StoreNotice) throws
}

/// The first answer to each `Idempotency-Key`.
public protocol IdempotencyStore {
    /// The answer stored for `key`, if it is younger than `since`.
    func idempotentAnswer(appID: String, key: String, since: Date) throws -> IdempotentAnswer?
    /// Stores the answer for `key`, replacing one older than `since`; `conflict` when
    /// a younger one is stored (another request with the key got there first).
    func saveIdempotentAnswer(appID: String, key: String, _ answer: IdempotentAnswer, replacingBefore since: Date) throws
    /// Forgets answers older than `before`. Answers how many.
    @discardableResult
    func purgeIdempotentAnswers(before: Date) throws -> Int
}

/// Sends held for their time, and activities' timelines: the items stay in the
/// database (a million pending cost the server no memory), and each fires once.
public protocol ScheduleStore {
    /// Adds schedule items of `appID`, in order, all created at `now`.
    func insertSchedules(appID: String, _ items: [NewSchedule], now: Date) throws
    /// The item `scheduleID` of `appID`.
    func schedule(appID: String, scheduleID: String) throws -> ScheduleRecord?
    /// Items of `appID` by `filter`, soonest first (by time, then creation).
    func schedules(appID: String, filter: ScheduleFilter) throws -> [ScheduleRecord]
    /// Cancels an item, if it is still scheduled: one statement, so that an item
    /// being fired at that moment is either cancelled or fired, never both. Answers
    /// whether this call cancelled it.
    func cancelSchedule(appID: String, scheduleID: String, now: Date) throws -> Bool
    /// Settles every item still scheduled of the activity's timelines (entries and
    /// ends) as `status` with `reason`. Answers how many.
    @discardableResult
    func settlePendingTimeline(
        appID: String, activityID: String, status: ScheduleStatus, reason: String, now: Date
    ) throws -> Int
    /// The items still scheduled of `kind` for the activity, soonest first.
    func pendingSchedules(appID: String, activityID: String, kind: ScheduleKind) throws -> [ScheduleRecord]
    /// The earliest time an item is due, if any is scheduled.
    func nextScheduleTime() throws -> Date?
    /// The earliest time any timed work is due, if any is: a scheduled item, a
    /// timeline's renewal, the end time of an activity not ended. A write that adds
    /// or moves one tells the other nodes (`StoreNotice.timersChanged`).
    func nextTimedWork() throws -> Date?
    /// Drops, as superseded, every timeline entry due at `now` that a newer entry of
    /// the same activity, also due, replaces. Answers how many.
    @discardableResult
    func skipSupersededEntries(now: Date) throws -> Int
    /// Up to `limit` items due at `now`, soonest first, locked for the rest of the
    /// transaction (an item another transaction holds is skipped).
    func claimDueSchedules(now: Date, limit: Int) throws -> [ScheduleRecord]
    /// Records what became of a claimed item.
    func settleSchedule(
        sequence: Int64, status: ScheduleStatus, reason: String?, detail: String?, targets: Int?, at: Date
    ) throws
    /// Moves the items still scheduled of an activity's timeline to its successor.
    /// Answers how many.
    @discardableResult
    func moveTimeline(appID: String, from activityID: String, to successorID: String) throws -> Int
    /// The activity's timeline settings.
    func timeline(appID: String, activityID: String) throws -> TimelineRecord?
    /// Stores (or replaces) an activity's timeline settings.
    func putTimeline(_ timeline: TimelineRecord) throws
    /// The items of one generation of an activity's timeline, in order.
    func timelineItems(appID: String, activityID: String, generation: Int64) throws -> [ScheduleRecord]
    /// Timelines whose renewal has come, oldest first.
    func dueRenewals(now: Date, limit: Int) throws -> [TimelineRecord]
    /// Items still scheduled, in every app.
    func pendingScheduleCount() throws -> Int
}

/// The outbox: every event, written in the transaction of the change it
/// describes, kept for the retention period, read in commit order.
public protocol EventStore {
    /// Adds events, given sequences in the order their transaction commits among
    /// every transaction that writes events (readers resuming after a sequence miss
    /// none).
    func appendEvents(_ events: [NewEvent]) throws
    /// Events after `sequence`, in order: of `appID` (every app when nil), of the
    /// types `patterns` take (every type when empty), at most `limit`.
    func events(appID: String?, after sequence: Int64, patterns: [EventPattern], limit: Int) throws -> [EventRecord]
    /// The event at `sequence` of `appID`.
    func event(appID: String, sequence: Int64) throws -> EventRecord?
    /// The newest event's sequence (0 when there is none).
    func latestEventSequence() throws -> Int64
    /// Deletes up to `limit` events that happened before `before`, and the finished
    /// webhook deliveries of them. Answers how many events.
    @discardableResult
    func purgeEvents(before: Date, limit: Int) throws -> Int
}

/// The history Islet keeps of what it sent: activities that ended, with their
/// copies, audiences, taps and timelines, and sends with their pushes. Kept for
/// the retention (each app's own, when shorter than the server's), then deleted a
/// small batch per transaction, so that no purge holds the writer for long.
/// Nothing still needed goes: a push queued or being sent, its send, a running
/// activity's copies, or what the budgets count.
public protocol HistoryStore {
    /// Deletes the pushes of `appID` that settled (sent, failed, dropped) and last
    /// changed before `before`, of sends made before `before`, then those sends once
    /// no push of theirs is left (a push queued or being sent is never deleted, and
    /// so neither is its send), at most `limit` rows in all, oldest sends first. The
    /// push-to-start sends of an activity still running stay (the report of starts
    /// no device confirmed reads them). Answers what it deleted (`sends`, `pushes`);
    /// fewer than `limit` rows means nothing more is to be deleted before `before`.
    ///
    /// Kept apart from the activities' purge: the only one that knows the queue's
    /// tables.
    func purgeSettledSends(appID: String, before: Date, limit: Int) throws -> PurgedHistory
    /// Deletes the activities of `appID` that ended before `endedBefore`, once no
    /// send of theirs is left (``purgeSettledSends(appID:before:limit:)`` deletes
    /// those), no schedule item of theirs waits and no channel Islet made for them
    /// is still to be retired: first their copies, audiences, taps, settled schedule
    /// items and timelines, then the activities, at most `limit` rows in all,
    /// oldest first. An app's channels stop naming an activity deleted. Answers
    /// what it deleted; fewer than `limit` rows means nothing more is to be deleted
    /// before `endedBefore`.
    func purgeEndedActivities(appID: String, endedBefore: Date, limit: Int) throws -> PurgedHistory
    /// How many activities, sends and pushes `appID` holds, and when the oldest was
    /// made: counts over indexes, no table read whole.
    func historySummary(appID: String) throws -> HistorySummary
}

/// Webhook endpoints and their deliveries.
public protocol WebhookStore {
    /// Adds a webhook.
    func insertWebhook(_ webhook: WebhookRecord) throws
    /// The webhook `webhookID` of `appID`.
    func webhook(appID: String, webhookID: String) throws -> WebhookRecord?
    /// The webhooks of `appID`, oldest first.
    func webhooks(appID: String) throws -> [WebhookRecord]
    /// The webhooks of `appID`, oldest first, after `after`, at most `limit`.
    func webhooks(appID: String, after: WebhookCursor?, limit: Int) throws -> [WebhookRecord]
    /// How many webhooks `appID` has, its app locked until the transaction ends so
    /// that two creations counting at once count one after the other.
    func lockedWebhookCount(appID: String) throws -> Int
    /// Replaces a webhook's settings (url, events, description, secrets, enabled,
    /// disabled reason, failing since).
    func updateWebhook(_ webhook: WebhookRecord) throws
    /// Stops an enabled webhook's failure clock (`failingSince`) after a success,
    /// touching `updatedAt`; changes nothing when the clock is not running. Answers
    /// whether it ran. (A success is the common answer: this spares the reading of
    /// the whole webhook, its sealed secrets opened, for every delivery.)
    @discardableResult
    func clearWebhookFailure(appID: String, webhookID: String, now: Date) throws -> Bool
    /// Removes a webhook and its deliveries. Answers whether it existed.
    func deleteWebhook(appID: String, webhookID: String) throws -> Bool
    /// Whether an enabled webhook of `appID` takes events of `type` (the worker
    /// writes a `push.sent` per push only while one does, or a stream is open).
    func webhookTakes(appID: String, type: EventType) throws -> Bool
    /// The enabled webhooks of every app whose cursor is behind `sequence`.
    func webhooksBehind(_ sequence: Int64) throws -> [WebhookRecord]
    /// Adds one pending delivery per event of `events` to `webhookID`, due at `now`,
    /// and moves the webhook's cursor to `cursor`.
    func addDeliveries(webhookID: String, appID: String, events: [EventRecord], cursor: Int64, now: Date) throws
    /// Takes up to `limit` due deliveries, oldest first, none of them behind an
    /// earlier delivery of its ordering key at its webhook that is being sent or
    /// waits for a retry, and marks them delivering until `leaseUntil` (deliveries
    /// left delivering past it are taken again). One transaction at a time may
    /// claim (see ``NodeCoordination/claimPeriodicJob(_:)``).
    func claimDueDeliveries(now: Date, limit: Int, nodeID: String, leaseUntil: Date) throws -> [ClaimedWebhookDelivery]
    /// Records an attempt of a delivery this node claimed. Answers whether it did.
    @discardableResult
    func recordAttempt(deliverySequence: Int64, _ attempt: WebhookAttempt, nodeID: String, now: Date) throws -> Bool
    /// Hands back claimed deliveries that were not tried (they wait behind a failed
    /// one of their chain), their attempts unchanged.
    func releaseDeliveries(_ sequences: [Int64], nodeID: String) throws
    /// Deliveries of a webhook, newest first, before `before` (a sequence), at most `limit`.
    func deliveries(appID: String, webhookID: String, before: Int64?, limit: Int) throws -> [WebhookDeliveryRecord]
    /// One delivery.
    func delivery(appID: String, webhookID: String, sequence: Int64) throws -> WebhookDeliveryRecord?
    /// Queues a delivery again at `now` (it keeps its event and webhook id). Answers
    /// whether it was not being sent at that moment.
    func retryDelivery(appID: String, webhookID: String, sequence: Int64, now: Date) throws -> Bool
    /// Fails every unfinished delivery of a webhook (it was disabled). Answers how many.
    @discardableResult
    func failPendingDeliveries(webhookID: String, reason: String, now: Date) throws -> Int
    /// The earliest time a pending delivery is due, if any.
    func nextDeliveryTime() throws -> Date?
}

/// The dashboard's signed-in sessions, kept in the database so that every node of
/// it knows them; each is found by the hash of its token, never by the token.
public protocol SessionStore {
    /// Adds a session; `conflict` when its token hash is taken.
    func insertSession(_ session: SessionRecord) throws
    /// The session whose token hashes to `tokenHash`, expired or not.
    func session(tokenHash: Data) throws -> SessionRecord?
    /// Removes a session. Answers whether there was one.
    @discardableResult
    func deleteSession(tokenHash: Data) throws -> Bool
    /// Removes every session. Answers how many there were.
    @discardableResult
    func deleteAllSessions() throws -> Int
    /// Removes every session that expired at or before `now`. Answers how many.
    @discardableResult
    func deleteExpiredSessions(now: Date) throws -> Int
}

/// Everything one transaction can do.
/// The broadcast channels apps made through Islet.
public protocol ChannelStore {
    /// Adds a channel of `appID`.
    func insertChannel(appID: String, _ channel: ChannelRecord) throws
    /// A page of the app's channels in the order of their ids, after `afterChannelID`.
    func channels(appID: String, afterChannelID: String?, limit: Int) throws -> [ChannelRecord]
    /// The channel `channelID` (base64url) of `appID`.
    func channel(appID: String, channelID: String) throws -> ChannelRecord?
    /// Forgets a channel. Answers whether there was one.
    func deleteChannel(appID: String, channelID: String) throws -> Bool
    /// How many channels the app has in `environment`.
    func channelCount(appID: String, environment: APNsEnvironment) throws -> Int
    /// Gives the channels `channelIDs` to the activity, whose delivery becomes
    /// `channel`: each that no other activity running at `now` (started after
    /// `expiredBy` and not ended) holds. Answers the channels it could not take.
    func assignChannels(appID: String, activityID: String, channelIDs: [String], expiredBy: Date) throws -> [String]
    /// Marks the copies of `deviceIDs` as listening on the activity's channel: active
    /// from their start, with no update token to wait for.
    func subscribeCopies(appID: String, activityID: String, deviceIDs: [String]) throws
    /// The channels of an activity, in the order of their ids.
    func activityChannels(appID: String, activityID: String) throws -> [ChannelRecord]
    /// Channels Islet created whose activity is over: ended at or before `endedBy`,
    /// started at or before `expiredBy` (past every window), or gone (and the
    /// channel made at or before `expiredBy`).
    /// `after` goes on past a place in their order (app, then channel id).
    func retiredChannels(
        endedBy: Date, expiredBy: Date, after: ChannelCursor?, limit: Int
    ) throws -> [(appID: String, channel: ChannelRecord)]
}

/// The token buckets of the apps' rate limits, where several nodes share them.
public protocol RateLimitStore {
    /// The bucket of `appID`'s `family` as last stored (`tokens` at `updatedAt`),
    /// locked until the transaction ends; `nil` when none is stored yet.
    func lockedRateBucket(appID: String, family: String) throws -> (tokens: Double, updatedAt: Date)?
    /// Stores the bucket of `appID`'s `family`.
    func saveRateBucket(appID: String, family: String, tokens: Double, updatedAt: Date) throws
    /// Adds `counts` (requests refused by a rate limit, by app and minute) to the
    /// stored counts, and deletes those of minutes before `forgetBefore`.
    func addRefusals(_ counts: [RefusalCount], forgetBefore: Date) throws
}

/// Requests of an app refused by its rate limits within one minute.
public struct RefusalCount: Sendable, Hashable {
    public var appID: String
    /// The minute's start.
    public var minute: Date
    public var count: Int64

    public init(appID: String, minute: Date, count: Int64) {
        self.appID = appID
        self.minute = minute
        self.count = count
    }
}

/// Receipts: a device saying which send of an activity it showed.
public protocol ReceiptStore {
    /// Records that `deviceID`'s copy of the activity showed send `sendID` at
    /// `receivedAt`, once: the send counts it, and the copy keeps its newest.
    /// Answers the receipt as stored (an earlier one of the same send and device
    /// as it was), or nil when no send of the activity has that id.
    func recordReceipt(
        appID: String, activityID: String, deviceID: String, sendID: Int64, receivedAt: Date, now: Date
    ) throws -> StoredReceipt?
}

/// A receipt as stored.
public struct StoredReceipt: Sendable, Hashable {
    /// When the device showed the send.
    public var receivedAt: Date
    /// Whether this request recorded it (false: the same receipt came before).
    public var counted: Bool

    /// Creates a receipt.
    public init(receivedAt: Date, counted: Bool) {
        self.receivedAt = receivedAt
        self.counted = counted
    }
}

public protocol StoreSession:
    AppStore, DeviceStore, ActivityStore, ActivityTypeStore, PushQueue, PushHistory, IdempotencyStore, NodeStore,
    NodeCoordination, ScheduleStore, EventStore, WebhookStore, SessionStore, RateLimitStore, ChannelStore, HistoryStore,
    ReceiptStore
{
    /// Answers when the database does (a health check).
    func ping() throws
    /// The version of the database's schema.
    func schemaVersion() throws -> Int
}

/// A database holding Islet's state: transactions, async for request handlers and
/// on the calling thread for the delivery worker (which has a thread of its own).
public protocol Store: Sendable {
    /// `sqlite` or `postgresql`.
    var backend: String { get }
    /// Whether several nodes may share the database: claims then hold leases, and
    /// a node hands back only its own.
    var isShared: Bool { get }
    /// Where the data is, for logs (a file path; never a password).
    var location: String { get }
    /// Runs `body` as a read.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T
    /// Runs `body` in one transaction: everything it does is committed (durably)
    /// before this returns, or nothing is. A backend may run `body` again from the
    /// start after a transaction it had to roll back (a lost connection, two
    /// transactions deadlocked): `body` keeps no state of its own across runs.
    ///
    /// `durable: false` may commit without waiting for the disk (it survives the
    /// process's crash, and a power loss once a later durable commit synced): for
    /// what is safe to redo, such as a webhook delivery claimed or its answer (sent
    /// again at worst, with the same `webhook-id`).
    func write<T: Sendable>(durable: Bool, _ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T
    /// Runs `body` as a read on the calling thread.
    func readNow<T: Sendable>(_ body: (any StoreSession) throws -> T) throws -> T
    /// Runs `body` in one transaction on the calling thread. `durable: false` may
    /// commit without waiting for the disk: for what a restart redoes safely (pushes
    /// marked in flight, or their answers).
    func writeNow<T: Sendable>(durable: Bool, _ body: (any StoreSession) throws -> T) throws -> T
    /// Calls `handler`, on a thread of the store's, with every notice sent by
    /// ``NodeCoordination/notifyNodes(_:)`` on any node of the database (this one
    /// included). A database only one node uses sends none.
    func subscribe(_ handler: @escaping @Sendable (StoreNotice) -> Void)
    /// Closes the database; later calls fail with `unavailable`.
    func close()
    /// Rows this process's writes inserted, changed or deleted since the store
    /// opened, when the backend counts them (SQLite); `nil` otherwise (PostgreSQL's
    /// own statistics count them: `pg_stat_user_tables`).
    var rowsWritten: Int64? { get }
}

extension Store {
    /// Not counted, unless the backend says otherwise.
    public var rowsWritten: Int64? { nil }

    /// A durable transaction.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await write(durable: true, body)
    }

    /// A durable transaction on the calling thread.
    public func writeNow<T: Sendable>(_ body: (any StoreSession) throws -> T) throws -> T {
        try writeNow(durable: true, body)
    }
}

extension DeviceStore {
    /// Creates a device without a secret, or updates it. Answers whether it was
    /// created.
    public func upsertDevice(appID: String, deviceID: String, _ registration: DeviceRegistration, now: Date) throws -> Bool {
        if try insertDevice(appID: appID, deviceID: deviceID, registration, secretHash: nil, now: now) { return true }
        try updateDevice(appID: appID, deviceID: deviceID, registration, now: now)
        return false
    }

    /// The kinds under which `token` is registered anywhere in the app.
    public func registeredKinds(appID: String, token: String) throws -> Set<PushTokenKind> {
        try registeredKinds(appID: appID, token: token, except: nil)
    }
}

extension ActivityTypeStore {
    /// Stores (or replaces) a type that asks for no receipts.
    public func putActivityType(appID: String, name: String, schema: ActivityTypeSchema, now: Date) throws -> Bool {
        try putActivityType(appID: appID, name: name, schema: schema, receipts: false, now: now)
    }
}

extension ActivityStore {
    /// Ends one device's copy, whatever its token.
    @discardableResult
    public func endCopy(appID: String, activityID: String, deviceID: String, cause: EndCause, at date: Date) throws -> Bool {
        try endCopy(appID: appID, activityID: activityID, deviceID: deviceID, cause: cause, onlyToken: nil, at: date)
    }

    /// Adds pending copies that no send of the store's made (a start's pushes as
    /// rows of their own).
    public func insertPendingCopies(appID: String, activityID: String, targets: [PushTarget], now: Date) throws {
        try insertPendingCopies(appID: appID, activityID: activityID, targets: targets, startSendID: nil, now: now)
    }

    /// Adds Android copies that no start's send made (a device joining on its own).
    @discardableResult
    public func insertAndroidCopies(appID: String, activityID: String, deviceIDs: [String], now: Date) throws -> Int {
        try insertAndroidCopies(appID: appID, activityID: activityID, deviceIDs: deviceIDs, startSendID: nil, now: now)
    }
}
