import IsletCore

/// The header fields of one request as the checks read them: the list as received,
/// and the first value of each header APNs looks at.
///
/// A push carries a handful of headers, so they are found by one scan of the list
/// rather than through a dictionary, whose hashing would cost more than the scan.
struct HeaderFields {
    /// The fields in arrival order; a name may repeat.
    let list: [(name: String, value: String)]
    /// `authorization`.
    private(set) var authorization: String?
    /// `apns-topic`.
    private(set) var topic: String?
    /// `apns-push-type`.
    private(set) var pushType: String?
    /// `apns-priority`.
    private(set) var priority: String?
    /// `apns-id`.
    private(set) var id: String?
    /// `apns-collapse-id`.
    private(set) var collapseID: String?
    /// `apns-expiration`.
    private(set) var expiration: String?

    /// Past this many fields, repeated names are found through a set rather than by
    /// comparing every pair.
    private static let pairwiseLimit = 32

    init(_ list: [(name: String, value: String)]) {
        self.list = list
        for (name, value) in list {
            // The names are ``APNsHeaderName``'s, written out so that each is a
            // constant rather than a shared global read on every comparison. They
            // are lowercase ASCII letters and hyphens, which have no other spelling
            // in Unicode: a name of another length is none of them.
            switch name.utf8.count {
            case 7:
                if id == nil, name == "apns-id" { id = value }
            case 10:
                if topic == nil, name == "apns-topic" { topic = value }
            case 13:
                if name == "authorization" {
                    if authorization == nil { authorization = value }
                } else if priority == nil, name == "apns-priority" {
                    priority = value
                }
            case 14:
                if pushType == nil, name == "apns-push-type" { pushType = value }
            case 15:
                if expiration == nil, name == "apns-expiration" { expiration = value }
            case 16:
                if collapseID == nil, name == "apns-collapse-id" { collapseID = value }
            default:
                break
            }
        }
    }

    /// The first name to appear a second time, in arrival order; `nil` when every
    /// name appears once.
    func repeatedName() -> String? {
        guard list.count > 1 else { return nil }
        if list.count > Self.pairwiseLimit {
            var seen = Set<String>(minimumCapacity: list.count)
            for (name, _) in list where !seen.insert(name).inserted { return name }
            return nil
        }
        for later in 1..<list.count {
            let name = list[later].name
            for earlier in 0..<later where list[earlier].name == name { return name }
        }
        return nil
    }
}
