import IsletCore
import IsletService

extension AnswerSchemas {
    /// The shapes the device and broadcast channel routes share.
    static let deviceComponents: [String: JSONValue] = [
        "DeviceRegistered": DeviceAnswerParts.registered,
        "DeviceListed": DeviceAnswerParts.listed,
        "DeviceDetail": DeviceAnswerParts.detail,
        "DeviceStartToken": DeviceAnswerParts.startToken,
        "DeviceCopy": DeviceAnswerParts.copy,
        "DeviceCopyOfActivity": DeviceAnswerParts.copyOfActivity,
        "DevicePush": DeviceAnswerParts.push,
        "DeviceSecret": DeviceAnswerParts.secret,
        "Channel": DeviceAnswerParts.channel,
    ]

    // MARK: Device routes' answers

    /// `GET /v1/apps/{app_id}/devices`: a page of devices as read back, without tags.
    static let deviceList: JSONValue = page(of: ref("DeviceListed"), required: ["next_cursor"])

    /// `GET /v1/apps/{app_id}/devices/{device_id}`.
    static let deviceDetail: JSONValue = ref("DeviceDetail")

    /// `PUT /v1/apps/{app_id}/devices/{device_id}` (201 and 200 alike).
    static let deviceRegistered: JSONValue = ref("DeviceRegistered")

    /// `PUT …/devices/{device_id}/push-to-start/{activity_type}` (201 and 200 alike).
    static let deviceStartTokenRegistered: JSONValue = {
        let properties: [String: JSONValue] = [
            "device_id": string, "activity_type": string, "registered_at": time,
        ]
        return object(properties, required: ["device_id", "activity_type", "registered_at"])
    }()

    /// `PUT …/devices/{device_id}/activities/{activity_id}` (201 and 200 alike).
    static let deviceUpdateTokenRegistered: JSONValue = {
        let properties: [String: JSONValue] = [
            "device_id": string, "activity_id": string, "activity_type": string, "registered_at": time,
        ]
        return object(properties, required: ["device_id", "activity_id", "activity_type", "registered_at"])
    }()

    /// `POST …/activities/{activity_id}/end`: the device's copy, ended.
    static let deviceActivityEnded: JSONValue = {
        let properties: [String: JSONValue] = ["activity_id": string, "device": ref("DeviceCopy")]
        return object(properties, required: ["activity_id", "device"])
    }()

    /// `POST …/activities/{activity_id}/taps`: the push the tap counts on (null when
    /// none was delivered yet) and when.
    static let deviceTapRecorded: JSONValue = {
        let properties: [String: JSONValue] = ["apns_id": nullable(string), "tapped_at": time]
        return object(properties, required: ["apns_id", "tapped_at"])
    }()

    /// `POST …/activities/{activity_id}/receipts`.
    static let deviceReceiptRecorded: JSONValue = {
        let properties: [String: JSONValue] = ["send_id": string, "received_at": time]
        return object(properties, required: ["send_id", "received_at"])
    }()

    /// `POST …/secret/rotate` and `POST …/secret/reset`.
    static let deviceSecretIssued: JSONValue = ref("DeviceSecret")

    // MARK: Channel routes' answers

    /// `POST /v1/apps/{app_id}/channels` and `GET …/channels/{channel_id}`.
    static let channelAnswer: JSONValue = ref("Channel")

    /// `GET /v1/apps/{app_id}/channels`.
    static let channelList: JSONValue = page(of: ref("Channel"), required: ["next_cursor"])
}

/// The parts of the device and channel answers' schemas.
private enum DeviceAnswerParts {
    typealias S = AnswerSchemas

    /// One of `values`, or `null` (`AnswerSchemas.nullable` of an enum would keep
    /// `null` out of its `enum`).
    static func nullableOneOf(_ values: [String]) -> JSONValue {
        let choices: [JSONValue] = values.map(JSONValue.string) + [.null]
        return ["type": ["string", "null"], "enum": .array(choices)]
    }

    static let platforms: [String] = DevicePlatform.allCases.map(\.rawValue)
    static let environments: [String] = APNsEnvironment.allCases.map(\.rawValue)

    /// `DeviceRoutes.json(_:)`: the device's registration.
    static let deviceProperties: [String: JSONValue] = [
        "device_id": S.string, "platform": S.oneOf(platforms),
        // null for an android device.
        "environment": nullableOneOf(environments),
        "has_apns_token": S.boolean, "has_fcm_token": S.boolean, "reachable": S.boolean,
        "user_id": S.nullable(S.string), "tags": S.array(S.string), "created_at": S.time, "updated_at": S.time,
        "has_secret": S.boolean, "frequent_updates": S.nullable(S.boolean), "os_version": S.nullable(S.string),
    ]

    /// `DeviceRoutes.readBack(_:)`'s additions: the tokens shortened, and when the
    /// device became unreachable.
    static let readBackProperties: [String: JSONValue] = [
        "apns_token_prefix": S.nullable(S.string), "fcm_token_prefix": S.nullable(S.string),
        "unreachable_at": S.nullable(S.time),
    ]

    /// A registration's answer: the device, and its secret when one was issued.
    static let registered: JSONValue = {
        var properties = deviceProperties
        properties["device_secret"] = S.string
        return S.object(properties, required: Array(deviceProperties.keys))
    }()

    /// A device in the list: as read back, without tags.
    static let listed: JSONValue = {
        var properties = deviceProperties.merging(readBackProperties) { first, _ in first }
        properties["tags"] = nil
        return S.object(properties, required: Array(properties.keys))
    }()

    /// A device's page: as read back, with its push-to-start tokens, copies and pushes.
    static let detail: JSONValue = {
        var properties = deviceProperties.merging(readBackProperties) { first, _ in first }
        properties["push_to_start"] = S.array(S.ref("DeviceStartToken"))
        properties["copies"] = S.array(S.ref("DeviceCopyOfActivity"))
        properties["pushes"] = S.array(S.ref("DevicePush"))
        return S.object(properties, required: Array(properties.keys))
    }()

    /// One push-to-start token on a device's page.
    static let startToken: JSONValue = {
        let properties: [String: JSONValue] = [
            "activity_type": S.string, "token_prefix": S.string, "environment": S.oneOf(environments),
            "registered_at": S.time,
        ]
        return S.object(properties, required: Array(properties.keys))
    }()

    /// `CopyJSON.json(_:)`: a device's copy of an activity.
    static let copyProperties: [String: JSONValue] = [
        "device_id": S.string, "status": S.oneOf(CopyStatus.allCases.map(\.rawValue)),
        "has_update_token": S.boolean, "update_token_prefix": S.nullable(S.string),
        // null for an android copy.
        "environment": nullableOneOf(environments),
        "token_registered_at": S.nullable(S.time), "created_at": S.time, "ended_at": S.nullable(S.time),
        "end_cause": nullableOneOf(EndCause.allCases.map(\.rawValue)), "on_channel": S.boolean,
        "platform": S.oneOf(platforms), "joined": S.boolean, "last_received_send_id": S.nullable(S.string),
        "last_received_at": S.nullable(S.time),
    ]

    static let copy: JSONValue = S.object(copyProperties, required: Array(copyProperties.keys))

    /// A copy on a device's page, with its activity's id and type.
    static let copyOfActivity: JSONValue = {
        var properties = copyProperties
        properties["activity_id"] = S.string
        properties["activity_type"] = S.string
        return S.object(properties, required: Array(properties.keys))
    }()

    /// `ActivityRoutes.json(_: PushHistoryItem)` with its activity (null for an alert).
    static let push: JSONValue = {
        var properties: [String: JSONValue] = [
            // A broadcast names its channel in place of a device.
            "device_id": S.nullable(S.string), "channel_id": S.nullable(S.string),
            "token_kind": S.oneOf(PushTokenKind.allCases.map(\.rawValue)), "platform": S.oneOf(["ios", "android"]),
            "event": S.oneOf(PushEvent.allCases.map(\.rawValue)),
            "status": S.oneOf(PushStatus.allCases.map(\.rawValue) + ["deferred"]),
            "environment": nullableOneOf(environments), "environment_switched": S.boolean,
            "apns_status": S.nullable(S.integer), "fcm_status": S.nullable(S.integer), "reason": S.nullable(S.string),
            "apns_id": S.string, "apns_unique_id": S.nullable(S.string), "fcm_message_name": S.nullable(S.string),
        ]
        let more: [String: JSONValue] = [
            "attempts": S.integer, "created_at": S.time, "updated_at": S.time, "sent_at": S.nullable(S.time),
            "taps": S.integer, "first_tapped_at": S.nullable(S.time), "priority_downgraded": S.boolean,
            "deferred_until": S.nullable(S.time), "send_id": S.string, "received_at": S.nullable(S.time),
            "activity_id": S.nullable(S.string),
        ]
        properties.merge(more) { first, _ in first }
        return S.object(properties, required: Array(properties.keys))
    }()

    /// A new device secret, shown once.
    static let secret: JSONValue = {
        let properties: [String: JSONValue] = ["device_id": S.string, "device_secret": S.string]
        return S.object(properties, required: ["device_id", "device_secret"])
    }()

    /// `ChannelRoutes.json(_:)`: a broadcast channel.
    static let channel: JSONValue = {
        let properties: [String: JSONValue] = [
            "channel_id": S.string, "apns_channel_id": S.string, "environment": S.oneOf(environments),
            "message_storage_policy": S.oneOf(["most_recent", "none"]), "created_at": S.time,
            "activity_id": S.nullable(S.string),
        ]
        return S.object(properties, required: Array(properties.keys))
    }()
}
