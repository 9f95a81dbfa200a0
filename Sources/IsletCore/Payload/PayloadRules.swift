import Foundation

/// The checks every push builder shares: the topic, envelope dates, priorities,
/// collapse ids, numbers JSON cannot carry, and the size of the encoded payload.
enum PayloadRules {
    /// Unix seconds at or above this (the year 5138) are taken for milliseconds.
    static let millisecondThreshold: Double = 1e11

    /// The `apns-topic` for `pushType`: the bundle id, with the type's suffix.
    static func topic(bundleID: String, pushType: APNsPushType) throws(PayloadError) -> String {
        guard !bundleID.isEmpty else {
            throw PayloadError(.invalidBundleID, field: "apns-topic", message: "the bundle id is empty")
        }
        guard !holdsWhitespace(bundleID) else {
            throw PayloadError(.invalidBundleID, field: "apns-topic", message: "the bundle id contains whitespace")
        }
        guard !holdsPushTypeSuffix(bundleID) else {
            throw PayloadError(
                .invalidBundleID, field: "apns-topic",
                message: "the bundle id already carries a push type suffix; give the bare bundle id")
        }
        return bundleID + (pushType.topicSuffix ?? "")
    }

    /// Whether `text` holds white space as `Character.isWhitespace` has it: ASCII
    /// text (every bundle id in practice) is read byte by byte, since on every push
    /// built the walk by characters cost more than the rest of the topic.
    static func holdsWhitespace(_ text: String) -> Bool {
        var ascii = true
        for byte in text.utf8 {
            if byte >= 0x80 {
                ascii = false
                break
            }
            if byte == 0x20 || (0x09...0x0D).contains(byte) { return true }
        }
        return ascii ? false : text.contains(where: \.isWhitespace)
    }

    /// Whether `text` holds `.push-type.`, read as bytes (`String.contains` of a
    /// string goes through Foundation on Linux).
    static func holdsPushTypeSuffix(_ text: String) -> Bool {
        text.utf8.firstRange(of: ".push-type.".utf8) != nil
    }

    /// `date` as whole Unix seconds (rounded down), refused when it lies before 1970
    /// or looks like milliseconds.
    static func unixSeconds(_ date: Date, field: String) throws(PayloadError) -> Int64 {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite else {
            throw PayloadError(.notFinite, field: field, message: "the date is not a finite number of seconds")
        }
        try checkSeconds(seconds, field: field)
        return Int64(seconds.rounded(.down))
    }

    /// Refuses a Unix time before 1970 or one that looks like milliseconds.
    static func checkSeconds(_ seconds: Double, field: String) throws(PayloadError) {
        guard seconds >= 0 else {
            throw PayloadError(
                .beforeEpoch, field: field, message: "\(text(seconds)) lies before 1970; dates here are Unix seconds")
        }
        guard seconds < millisecondThreshold else {
            throw PayloadError(
                .looksLikeMilliseconds, field: field,
                message: "\(text(seconds)) looks like milliseconds; dates here are Unix seconds")
        }
    }

    /// A number of seconds as a message shows it: whole when it is whole.
    static func text(_ seconds: Double) -> String {
        if let whole = Int64(exactly: seconds) { return String(whole) }
        return String(seconds)
    }

    /// The priority `requested`, or `fallback`, refused unless it is one of `allowed`.
    static func priority(
        _ requested: Int?, allowed: [Int], fallback: APNsPriority, kind: String
    ) throws(PayloadError) -> APNsPriority {
        guard let requested else { return fallback }
        guard allowed.contains(requested), let priority = APNsPriority(rawValue: requested) else {
            let list = allowed.map(String.init)
            let choices = list.count == 1 ? list[0] : list.dropLast().joined(separator: ", ") + " or " + list.last!
            throw PayloadError(
                .invalidPriority, field: APNsHeaderName.priority,
                message: "\(kind) take priority \(choices), not \(requested)")
        }
        return priority
    }

    /// The `apns-expiration` value in Unix seconds; a date before `now` is refused,
    /// since APNs would hold nothing for an offline device.
    static func expiration(_ expiration: PushExpiration?, now: Date) throws(PayloadError) -> Int64? {
        switch expiration {
        case nil: return nil
        case .onceOnly: return 0
        case .at(let date):
            let seconds = try unixSeconds(date, field: APNsHeaderName.expiration)
            guard date >= now else {
                throw PayloadError(
                    .inThePast, field: APNsHeaderName.expiration,
                    message: "\(seconds) lies before now (\(text(now.timeIntervalSince1970.rounded(.down)))); "
                        + "use once-only expiration to try a single delivery")
            }
            return seconds
        }
    }

    /// Refuses an empty collapse id or one longer than APNs allows.
    static func checkCollapseID(_ collapseID: String?) throws(PayloadError) {
        guard let collapseID else { return }
        let bytes = collapseID.utf8.count
        guard bytes > 0 else {
            throw PayloadError(.empty, field: APNsHeaderName.collapseID, message: "the collapse id is empty")
        }
        guard bytes <= APNsLimits.maximumCollapseIDBytes else {
            throw PayloadError(
                .tooLong, field: APNsHeaderName.collapseID,
                message: "the collapse id is \(bytes) bytes, over the \(APNsLimits.maximumCollapseIDBytes)-byte limit")
        }
    }

    /// Refuses `value` unless it is an object with at least one member.
    static func checkNonEmptyObject(_ value: JSONValue, field: String, what: String) throws(PayloadError) {
        guard let members = value.objectValue else {
            throw PayloadError(.notAnObject, field: field, message: "\(what) must be a JSON object")
        }
        guard !members.isEmpty else {
            throw PayloadError(.empty, field: field, message: "\(what) is an empty object")
        }
    }

    /// Refuses any NaN or infinite number inside `value`, naming its path.
    static func checkFinite(_ value: JSONValue, path: String) throws(PayloadError) {
        switch value {
        case .double(let number) where !number.isFinite:
            throw PayloadError(.notFinite, field: path, message: "\(number) is not a number JSON can carry")
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                try checkFinite(element, path: "\(path)[\(index)]")
            }
        case .object(let members):
            for key in members.keys.sortedByScalars() {
                try checkFinite(members[key]!, path: path.isEmpty ? key : "\(path).\(key)")
            }
        default:
            break
        }
    }

    /// The payload's JSON bytes, refused when over `limit` (see ``checkSize(_:limit:parts:)``).
    static func encode(_ payload: JSONValue, limit: PayloadLimit, parts: [String: JSONValue?] = [:]) throws(PayloadError) -> Data {
        let data = Data(payload.jsonText.utf8)
        try checkSize(data.count, limit: limit, parts: parts)
        return data
    }

    /// Refuses a payload of `size` bytes when it is over `limit`, saying which limit
    /// and which way the payload goes. The refusal names the largest of `parts` (a
    /// field path and its value, such as the content state), the field to shrink.
    static func checkSize(_ size: Int, limit: PayloadLimit, parts: [String: JSONValue?]) throws(PayloadError) {
        guard size > limit.bytes else { return }
        let sizes = parts.compactMap { field, value in value.map { (field, $0.jsonText.utf8.count) } }
        guard let largest = sizes.max(by: { ($0.1, $1.0) < ($1.1, $0.0) }) else {
            throw PayloadError(.tooLarge, field: "payload", message: limit.refusal(size: size))
        }
        throw PayloadError(
            .tooLarge, field: largest.0,
            message: limit.refusal(size: size)
                + "; this field is its largest part (\(PayloadLimit.grouped(largest.1)) bytes)")
    }
}
