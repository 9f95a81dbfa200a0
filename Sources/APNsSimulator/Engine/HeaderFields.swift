import IsletCore

/// The header fields of one request as the checks read them: the list as received,
/// and where the first of each header APNs looks at lies in it.
///
/// A push carries a handful of headers, so they are found by one scan of the list
/// rather than through a dictionary, whose hashing would cost more than the scan.
struct HeaderFields {
    /// The fields in arrival order; a name may repeat.
    let list: [(name: String, value: String)]
    /// Each known header's first position in ``list``.
    private var positions = Positions()

    /// Past this many fields, repeated names are found through a set rather than by
    /// comparing every pair.
    private static let pairwiseLimit = 32

    init(_ list: [(name: String, value: String)]) {
        self.list = list
        for position in list.indices {
            let name = list[position].name
            // The names are ``APNsHeaderName``'s, written out so that each is a
            // constant rather than a shared global read on every comparison. They
            // are lowercase ASCII letters and hyphens, which have no other spelling
            // in Unicode: a name of another length is none of them.
            switch name.utf8.count {
            case 7:
                if positions.id == nil, name == "apns-id" { positions.id = position }
            case 10:
                if positions.topic == nil, name == "apns-topic" { positions.topic = position }
            case 13:
                if name == "authorization" {
                    if positions.authorization == nil { positions.authorization = position }
                } else if positions.priority == nil, name == "apns-priority" {
                    positions.priority = position
                }
            case 14:
                if positions.pushType == nil, name == "apns-push-type" { positions.pushType = position }
            case 15:
                if positions.expiration == nil, name == "apns-expiration" { positions.expiration = position }
            case 16:
                if positions.collapseID == nil, name == "apns-collapse-id" { positions.collapseID = position }
            default:
                break
            }
        }
    }

    /// `authorization`.
    var authorization: String? { value(at: positions.authorization) }
    /// `apns-topic`.
    var topic: String? { value(at: positions.topic) }
    /// `apns-push-type`.
    var pushType: String? { value(at: positions.pushType) }
    /// `apns-priority`.
    var priority: String? { value(at: positions.priority) }
    /// `apns-id`.
    var id: String? { value(at: positions.id) }
    /// `apns-collapse-id`.
    var collapseID: String? { value(at: positions.collapseID) }
    /// `apns-expiration`.
    var expiration: String? { value(at: positions.expiration) }

    private func value(at position: Int?) -> String? {
        position.map { list[$0].value }
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
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: list.count) { lastBytes in
            for position in list.indices {
                // 0xFF, no ASCII, when the name is empty or its bytes are not at hand.
                let last = list[position].name.utf8.withContiguousStorageIfAvailable { $0.last ?? 0xFF }
                lastBytes[position] = last ?? 0xFF
            }
            for later in 1..<list.count {
                let name = list[later].name
                let last = lastBytes[later]
                for earlier in 0..<later {
                    // Names that end in different ASCII characters differ: Unicode
                    // has no other spelling of an ASCII character, and none combines
                    // with the character before it. This spares most comparisons.
                    let otherLast = lastBytes[earlier]
                    if last != otherLast, last < 0x80, otherLast < 0x80 { continue }
                    if list[earlier].name == name { return name }
                }
            }
            return nil
        }
    }

    /// The first position of each header APNs looks at.
    private struct Positions {
        var authorization: Int?
        var topic: Int?
        var pushType: Int?
        var priority: Int?
        var id: Int?
        var collapseID: Int?
        var expiration: Int?
    }
}
