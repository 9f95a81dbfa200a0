public import Foundation

/// What IsletKit needs from ActivityKit, for one activity type: the few reads and
/// streams it follows. `ActivityKitSource` implements it with the real ActivityKit
/// (on iOS only); tests implement it with a script. Every stream may be read by one
/// reader at a time, and a stream of a source that has nothing more to say finishes.
public protocol ActivitySource: Sendable {
    /// The activity type's Swift name, as the server and APNs name it
    /// (`DeliveryAttributes`).
    var activityType: String { get }
    /// The push-to-start token ActivityKit holds now, if any.
    func pushToStartToken() async -> Data?
    /// Each new push-to-start token, as ActivityKit hands it out.
    func pushToStartTokenUpdates() -> AsyncStream<Data>
    /// The activities of the type that exist now, ended ones included.
    func activities() async -> [ActivitySnapshot]
    /// Each activity of the type as it appears (started by the app or by a push).
    func activityUpdates() -> AsyncStream<ActivitySnapshot>
    /// Each update token of one activity (by ActivityKit's own id).
    func pushTokenUpdates(of localID: String) -> AsyncStream<Data>
    /// Each state one activity goes through.
    func phaseUpdates(of localID: String) -> AsyncStream<ActivityPhase>
    /// Each content one activity shows: the send id it carries, when its type has
    /// receipts on.
    func contentUpdates(of localID: String) -> AsyncStream<ShownContent>
    /// Ends an activity on the device at once (a duplicate of another).
    func end(_ localID: String) async
}

/// One activity as ActivityKit has it.
public struct ActivitySnapshot: Sendable, Hashable {
    /// ActivityKit's id of the activity on this device.
    public var localID: String
    /// The activity's id at Islet: the `islet_activity_id` its attributes carry
    /// (Islet stamps it into every start it sends; an app that starts an activity
    /// itself picks one). `nil` leaves the activity alone.
    public var activityID: String?
    /// Its update token, once ActivityKit minted one.
    public var pushToken: Data?
    public var phase: ActivityPhase
    /// The broadcast channel it listens on, when it was started on one (then no
    /// token is uploaded: the channel reaches it).
    public var channelID: String?
    /// The send id of the content it shows now, if its type has receipts on.
    public var shownSendID: String?

    public init(
        localID: String, activityID: String?, pushToken: Data? = nil, phase: ActivityPhase = .active,
        channelID: String? = nil, shownSendID: String? = nil
    ) {
        self.localID = localID
        self.activityID = activityID
        self.pushToken = pushToken
        self.phase = phase
        self.channelID = channelID
        self.shownSendID = shownSendID
    }
}

/// ActivityKit's `ActivityState`, as IsletKit reads it.
public enum ActivityPhase: String, Sendable, Hashable, Codable {
    case active, stale, ended, dismissed, pending

    /// Whether the activity is over on the device (ended, or removed by the user).
    public var isOver: Bool { self == .ended || self == .dismissed }
}

/// A content an activity showed: the send id its state carried under `islet`.
public struct ShownContent: Sendable, Hashable {
    public var sendID: String?
    public init(sendID: String?) { self.sendID = sendID }
}

/// What IsletKit needs from the app's process (UIKit on iOS): foreground returns,
/// the frequent-updates setting, background time for an upload.
public protocol DeviceHost: Sendable {
    /// The iOS version (`"18.2"`), `nil` when unknown.
    var osVersion: String? { get }
    /// ActivityKit's `frequentPushesEnabled`, `nil` when unknown.
    func frequentPushesEnabled() async -> Bool?
    /// Each change of it.
    func frequentPushEnablementUpdates() -> AsyncStream<Bool>
    /// Each return of the app to the foreground.
    func foregroundReturns() -> AsyncStream<Void>
    /// Asks for time to finish `work` when the app is in the background (a launch
    /// by push-to-start): the upload of the first token goes out within it.
    func withBackgroundTime(_ name: String, _ work: @Sendable () async -> Void) async
}

/// A host with no process of its own to watch (Linux, tests, extensions): nothing
/// changes, background time is not asked for.
public struct PlainDeviceHost: DeviceHost {
    public var osVersion: String?
    public var frequentPushes: Bool?
    public init(osVersion: String? = nil, frequentPushes: Bool? = nil) {
        self.osVersion = osVersion
        self.frequentPushes = frequentPushes
    }
    public func frequentPushesEnabled() async -> Bool? { frequentPushes }
    public func frequentPushEnablementUpdates() -> AsyncStream<Bool> { AsyncStream { $0.finish() } }
    public func foregroundReturns() -> AsyncStream<Void> { AsyncStream { $0.finish() } }
    public func withBackgroundTime(_ name: String, _ work: @Sendable () async -> Void) async { await work() }
}
