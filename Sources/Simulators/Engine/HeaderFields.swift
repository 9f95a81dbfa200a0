import Glibc
import HTTP2
import IsletCore

/// The header fields of one request as the checks read them: the fields as
/// received, and where the first of each header APNs looks at lies among them.
/// Names are matched without regard to ASCII case, as HTTP matches them (HTTP/2
/// sends them in lowercase).
///
/// A push carries a handful of headers, so they are found by one scan of their
/// names' bytes rather than through a dictionary, whose hashing would cost more
/// than the scan; a value becomes a `String` only when a check asks for it.
struct HeaderFields {
    /// The fields in arrival order; a name may repeat.
    let fields: HTTP2HeaderFields
    /// Each known header's first position in ``fields``.
    private var positions = Positions()

    /// Past this many fields, repeated names are found through a set rather than by
    /// comparing every pair.
    private static let pairwiseLimit = 32

    init(_ fields: HTTP2HeaderFields) {
        self.fields = fields
        var positions = Positions()
        for position in 0..<fields.count {
            fields.withName(at: position) { name in
                // The names are ``APNsHeaderName``'s, written out as constants. They
                // are lowercase ASCII letters and hyphens: a name of another length
                // is none of them.
                switch name.count {
                case 7:
                    if positions.id == nil, Self.matches(name, "apns-id") { positions.id = position }
                case 10:
                    if positions.topic == nil, Self.matches(name, "apns-topic") { positions.topic = position }
                case 13:
                    if Self.matches(name, "authorization") {
                        if positions.authorization == nil { positions.authorization = position }
                    } else if positions.priority == nil, Self.matches(name, "apns-priority") {
                        positions.priority = position
                    }
                case 14:
                    if positions.pushType == nil, Self.matches(name, "apns-push-type") { positions.pushType = position }
                case 15:
                    if positions.expiration == nil, Self.matches(name, "apns-expiration") { positions.expiration = position }
                case 16:
                    if positions.collapseID == nil, Self.matches(name, "apns-collapse-id") { positions.collapseID = position }
                default:
                    break
                }
            }
        }
        self.positions = positions
    }

    /// Whether `bytes` spell `name` (lowercase ASCII letters and hyphens) in any
    /// case: compared whole first, as names usually arrive in lowercase.
    private static func matches(_ bytes: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
        let count = name.utf8CodeUnitCount
        guard bytes.count == count else { return false }
        let expected = name.utf8Start
        if memcmp(bytes.baseAddress!, expected, count) == 0 { return true }
        for index in 0..<count {
            let byte = bytes[index]
            let want = expected[index]
            guard byte == want || (want >= UInt8(ascii: "a") && want <= UInt8(ascii: "z") && byte == want - 0x20) else { return false }
        }
        return true
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

    /// Calls `body` with the bytes of the first `authorization` value, or `nil`
    /// when there is none.
    func withAuthorization<R>(_ body: (UnsafeRawBufferPointer?) -> R) -> R {
        guard let position = positions.authorization else { return body(nil) }
        return fields.withValue(at: position) { body($0) }
    }

    private func value(at position: Int?) -> String? {
        position.map { fields.value(at: $0) }
    }

    /// The first name to appear a second time, in arrival order; `nil` when every
    /// name appears once.
    func repeatedName() -> String? {
        let count = fields.count
        guard count > 1 else { return nil }
        if count > Self.pairwiseLimit {
            // Bytes, not strings: `String`'s == would take names Unicode spells two
            // ways for one.
            var seen = Set<[UInt8]>(minimumCapacity: count)
            for position in 0..<count where !seen.insert(fields.withName(at: position) { Array($0) }).inserted {
                return fields.name(at: position)
            }
            return nil
        }
        for later in 1..<count {
            let repeated = fields.withName(at: later) { name -> Bool in
                for earlier in 0..<later {
                    let same = fields.withName(at: earlier) { other in
                        // Different lengths or last bytes spare most comparisons.
                        other.count == name.count
                            && (name.isEmpty || (other.last == name.last && memcmp(other.baseAddress!, name.baseAddress!, name.count) == 0))
                    }
                    if same { return true }
                }
                return false
            }
            if repeated { return fields.name(at: later) }
        }
        return nil
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
