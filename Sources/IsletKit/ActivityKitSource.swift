// The adapter to the real ActivityKit and UIKit. Compiled only where they exist (iOS),
// and so type-checked on Apple platforms only: everything it calls into is the
// platform-neutral core, which runs and is tested on Linux too.
#if canImport(ActivityKit) && canImport(UIKit) && os(iOS)
@preconcurrency public import ActivityKit
public import Foundation
import UIKit

/// One activity type, as ActivityKit has it: `Islet.track(ActivityKitSource<DeliveryAttributes>())`.
@available(iOS 17.2, *)
public struct ActivityKitSource<Attributes: ActivityAttributes & IsletActivityAttributes>: ActivitySource {
    public let activityType: String

    public init() { activityType = String(describing: Attributes.self) }

    public func pushToStartToken() async -> Data? { Activity<Attributes>.pushToStartToken }

    public func pushToStartTokenUpdates() -> AsyncStream<Data> {
        relay(Activity<Attributes>.pushToStartTokenUpdates) { $0 }
    }

    public func activities() async -> [ActivitySnapshot] { Activity<Attributes>.activities.map(Self.snapshot) }

    public func activityUpdates() -> AsyncStream<ActivitySnapshot> {
        relay(Activity<Attributes>.activityUpdates) { Self.snapshot($0) }
    }

    public func pushTokenUpdates(of localID: String) -> AsyncStream<Data> {
        guard let activity = Self.find(localID) else { return AsyncStream { $0.finish() } }
        return relay(activity.pushTokenUpdates) { $0 }
    }

    public func phaseUpdates(of localID: String) -> AsyncStream<ActivityPhase> {
        guard let activity = Self.find(localID) else { return AsyncStream { $0.finish() } }
        return relay(activity.activityStateUpdates) { Self.phase($0) }
    }

    public func contentUpdates(of localID: String) -> AsyncStream<ShownContent> {
        guard let activity = Self.find(localID) else { return AsyncStream { $0.finish() } }
        return relay(activity.contentUpdates) { ShownContent(sendID: Self.sendID($0.state)) }
    }

    public func end(_ localID: String) async {
        await Self.find(localID)?.end(nil, dismissalPolicy: .immediate)
    }

    static func find(_ localID: String) -> Activity<Attributes>? {
        Activity<Attributes>.activities.first { $0.id == localID }
    }

    static func snapshot(_ activity: Activity<Attributes>) -> ActivitySnapshot {
        ActivitySnapshot(
            localID: activity.id, activityID: activity.attributes.isletActivityID, pushToken: activity.pushToken,
            phase: phase(activity.activityState), channelID: ChannelActivities.channel(of: activity.id),
            shownSendID: sendID(activity.content.state))
    }

    static func sendID(_ state: Attributes.ContentState) -> String? {
        (state as? any IsletReceiptCarrying)?.islet?.sendID
    }

    static func phase(_ state: ActivityState) -> ActivityPhase {
        switch state {
        case .active: .active
        case .stale: .stale
        case .ended: .ended
        case .dismissed: .dismissed
        @unknown default: .pending
        }
    }
}

@available(iOS 18.0, *)
extension ActivityKitSource {
    /// Starts an activity on a broadcast channel the server gave (`channel_id` of
    /// `GET …/channels`): no token goes to the server, the channel reaches it.
    @discardableResult
    public func request(
        attributes: Attributes, content: ActivityContent<Attributes.ContentState>, channelID: String
    ) throws -> Activity<Attributes> {
        let activity = try Activity.request(attributes: attributes, content: content, pushType: .channel(channelID))
        ChannelActivities.remember(activity.id, channelID: channelID)
        return activity
    }
}

/// The channels of activities started here, by ActivityKit's id (ActivityKit does
/// not tell an activity's channel back).
enum ChannelActivities {
    // nonisolated(unsafe): read and written under `lock` only.
    nonisolated(unsafe) static var channels: [String: String] = [:]
    static let lock = NSLock()

    static func remember(_ localID: String, channelID: String) {
        lock.lock()
        channels[localID] = channelID
        lock.unlock()
    }

    static func channel(of localID: String) -> String? {
        lock.lock()
        defer { lock.unlock() }
        return channels[localID]
    }
}

/// The app's process, as UIKit and ActivityKit show it.
@available(iOS 17.2, *)
public struct UIKitDeviceHost: DeviceHost {
    public init() {}

    public var osVersion: String? {
        let version = ProcessInfo.processInfo.operatingSystemVersion
        return "\(version.majorVersion).\(version.minorVersion)"
    }

    public func frequentPushesEnabled() async -> Bool? { ActivityAuthorizationInfo().frequentPushesEnabled }

    public func frequentPushEnablementUpdates() -> AsyncStream<Bool> {
        relay(ActivityAuthorizationInfo().frequentPushEnablementUpdates) { $0 }
    }

    public func foregroundReturns() -> AsyncStream<Void> {
        relay(NotificationCenter.default.notifications(named: UIApplication.willEnterForegroundNotification)) { _ in () }
    }

    public func withBackgroundTime(_ name: String, _ work: @Sendable () async -> Void) async {
        let task = await BackgroundTask.begin(name)
        await work()
        await task.end()
    }
}

/// One UIKit background task: ended when the work is done, or when the system's
/// time for it runs out.
@MainActor
final class BackgroundTask {
    var identifier: UIBackgroundTaskIdentifier = .invalid

    static func begin(_ name: String) -> BackgroundTask {
        let task = BackgroundTask()
        task.identifier = UIApplication.shared.beginBackgroundTask(withName: name) { [weak task] in task?.end() }
        return task
    }

    func end() {
        guard identifier != .invalid else { return }
        UIApplication.shared.endBackgroundTask(identifier)
        identifier = .invalid
    }
}

/// An ActivityKit sequence as an `AsyncStream`, read by a task that stops when the
/// stream's reader goes away.
func relay<Base: AsyncSequence, Output: Sendable>(
    _ base: Base, _ transform: @escaping @Sendable (Base.Element) -> Output
) -> AsyncStream<Output> {
    // nonisolated(unsafe): the sequence is read by the one task below and nowhere else.
    nonisolated(unsafe) let base = base
    return AsyncStream { continuation in
        let task = Task {
            do {
                for try await element in base { continuation.yield(transform(element)) }
            } catch {}
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
    }
}
#endif
