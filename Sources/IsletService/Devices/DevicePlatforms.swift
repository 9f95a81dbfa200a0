public import IsletCore
public import Storage

/// The two platforms a device may be, and what each registers: an iOS device its
/// APNs environment and device token, an Android device its FCM registration token
/// (FCM has one environment). A device is one platform for good.
public enum DevicePlatform: String, Sendable, Hashable, CaseIterable {
    /// An iPhone or iPad, reached through APNs.
    case ios
    /// An Android device, reached through FCM.
    case android

    /// The registration a request describes, or `invalid` naming the field that does
    /// not belong to the platform (`environment` or `apns_token` on Android,
    /// `fcm_token` on iOS) or is missing (`environment` on iOS).
    public static func registration(
        platform: DevicePlatform, environment: APNsEnvironment?, apnsToken: String?, fcmToken: String?, userID: String??,
        tags: [String]?, frequentUpdates: Bool?? = nil, osVersion: String?? = nil
    ) throws(ServiceError) -> DeviceRegistration {
        switch platform {
        case .ios:
            guard let environment else {
                throw invalid("environment", "is required for an ios device")
            }
            if fcmToken != nil { throw invalid("fcm_token", "is taken only from an android device") }
            var registration = DeviceRegistration(
                platform: platform.rawValue, environment: environment, apnsToken: apnsToken, userID: userID, tags: tags)
            registration.frequentUpdates = frequentUpdates
            registration.osVersion = osVersion
            return registration
        case .android:
            if environment != nil { throw invalid("environment", "is not taken from an android device (FCM has one)") }
            if apnsToken != nil { throw invalid("apns_token", "is taken only from an ios device") }
            // What ActivityKit reports has no meaning on Android.
            if frequentUpdates != nil { throw invalid("frequent_updates", "is taken only from an ios device") }
            if osVersion != nil { throw invalid("os_version", "is taken only from an ios device") }
            if let fcmToken, let problem = fcmTokenProblem(fcmToken) { throw invalid("fcm_token", problem) }
            // The column wants an environment: FCM's one is production.
            var registration = DeviceRegistration(
                platform: platform.rawValue, environment: .production, apnsToken: nil, userID: userID, tags: tags)
            registration.fcmToken = fcmToken
            return registration
        }
    }

    /// Why `token` is not shaped as an FCM registration token, or `nil` when it is.
    /// A hex-only token is shaped as an APNs token, and refused as one: the kinds
    /// never cross.
    static func fcmTokenProblem(_ token: String) -> String? {
        let bytes = Array(token.utf8)
        let allowed = bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
        }
        guard (20...4096).contains(bytes.count), allowed else {
            return "must be an FCM registration token (20 to 4096 letters, digits, -, _ and :)"
        }
        let hexOnly = bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        guard !hexOnly else {
            return "is all hexadecimal, the shape of an APNs device token, not of an FCM registration token;"
                + " an APNs token goes in apns_token, on a device registered with platform ios and its environment"
        }
        return nil
    }

    private static func invalid(_ field: String, _ message: String) -> ServiceError {
        ServiceError.invalid("The field \(field) \(message).", field: field, message)
    }
}
