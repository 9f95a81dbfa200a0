import Foundation

/// What a content state carries under the key `islet` when its type has receipts on:
/// the id of the send that brought it. Declare it in the app's `ContentState` as
/// `var islet: IsletStamp?` (optional: the app's own states, and those of a type with
/// receipts off, carry none).
public struct IsletStamp: Codable, Hashable, Sendable {
    public var sendID: String

    public init(sendID: String) { self.sendID = sendID }

    enum CodingKeys: String, CodingKey {
        case sendID = "send_id"
    }
}

/// A content state that carries Islet's stamp: IsletKit reads it from each content
/// the activity shows and tells the server the send was shown (a receipt).
public protocol IsletReceiptCarrying {
    var islet: IsletStamp? { get }
}

/// Attributes that carry the activity's id at Islet: Islet stamps
/// `islet_activity_id` into the attributes of every start it sends. Declare it as
/// `var isletActivityID: String?` with the coding key `islet_activity_id`; an app
/// that starts an activity itself sets it to an id of its own choosing.
public protocol IsletActivityAttributes {
    var isletActivityID: String? { get }
}
