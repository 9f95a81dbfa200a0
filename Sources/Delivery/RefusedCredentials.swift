import IsletSync
public import Foundation
public import IsletCore

/// The one memory of credentials a push service refused, for every transport: APNs
/// refusing an app's signing key (InvalidProviderToken, a 403 about the key or
/// team), FCM refusing a send's access token for good (PERMISSION_DENIED,
/// SENDER_ID_MISMATCH, a replacement token refused again) or its token endpoint
/// refusing the service account's assertion.
///
/// A refusal belongs to one version of one app's credentials of one service (the
/// app's `updatedAt` when its credentials were read): saving the app's credentials
/// again forgets it. While it stands, a transport answers the app's pushes with it
/// (`credentialsRejected`, no attempt) instead of sending them, so a refused key
/// costs one request, not one per push. A refusal the service may lift by itself
/// (the token endpoint's: a clock set right again, a key restored) stands only
/// until its `until`.
public final class RefusedCredentials: Sendable {
    /// Whose credentials: the service and the app, at the version of its
    /// credentials that was refused.
    public struct Subject: Hashable, Sendable {
        /// The push service that refused them.
        public var service: PushService
        /// The app.
        public var appID: String
        /// The app's `updatedAt` when its credentials were read.
        public var version: Date

        /// Names the credentials of `appID` at `version` for `service`.
        public init(service: PushService, appID: String, version: Date) {
            self.service = service
            self.appID = appID
            self.version = version
        }
    }

    /// The push services whose credentials are remembered.
    public enum PushService: String, Sendable, Hashable {
        case apns, fcm
    }

    /// One refusal: why, since when, and until when (`nil`: until the credentials
    /// change).
    public struct Refusal: Sendable, Equatable {
        /// The service's reason (`InvalidProviderToken`, `SENDER_ID_MISMATCH`, …).
        public var reason: String
        /// When it was recorded.
        public var since: Date
        /// When it stops standing; `nil`: until the app's credentials change.
        public var until: Date?
    }

    private let clock: any WallClock
    /// The refusals by app and service; one version per pair (a newer version
    /// replaces an older one, so this holds at most two entries per app).
    private let refusals = Lock<[AppService: (version: Date, refusal: Refusal)]>([:])

    private struct AppService: Hashable {
        let service: PushService
        let appID: String
    }

    /// A memory whose timed refusals end by `clock`.
    public init(clock: any WallClock = SystemWallClock()) {
        self.clock = clock
    }

    /// The refusal standing for `subject` now, if one does.
    public func refusal(of subject: Subject) -> Refusal? {
        let now = clock.now()
        return refusals.withLock { refusals -> Refusal? in
            let key = AppService(service: subject.service, appID: subject.appID)
            guard let entry = refusals[key] else { return nil }
            // Credentials saved since, or a timed refusal over (a clock stepped back
            // past its start ends it too): forgotten.
            if entry.version != subject.version { return nil }
            if let until = entry.refusal.until, now >= until || now < entry.refusal.since { return nil }
            return entry.refusal
        }
    }

    /// Remembers that `subject`'s credentials were refused for `reason`, until
    /// `until` (`nil`: until they change). A standing refusal is not shortened by a
    /// timed one.
    public func record(_ subject: Subject, reason: String, until: Date? = nil) {
        let now = clock.now()
        refusals.withLock { refusals in
            let key = AppService(service: subject.service, appID: subject.appID)
            if let entry = refusals[key], entry.version == subject.version, entry.refusal.until == nil, until != nil { return }
            refusals[key] = (subject.version, Refusal(reason: reason, since: now, until: until))
        }
    }
}
