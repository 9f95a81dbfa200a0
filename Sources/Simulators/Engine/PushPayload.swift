import Foundation
import IsletCore

/// The `aps` members a simulated device reads, each as the payload's JSON holds it.
struct APSFields: Equatable {
    /// Whether `aps` has an `alert` member: all a device needs of a push that is not
    /// for a Live Activity.
    var hasAlert = false
    // The rest are read for Live Activity pushes only.
    /// `alert`.
    var alert: JSONValue?
    /// `event`.
    var event: JSONValue?
    /// `timestamp`.
    var timestamp: JSONValue?
    /// `stale-date`.
    var staleDate: JSONValue?
    /// `dismissal-date`.
    var dismissalDate: JSONValue?
    /// `content-state`.
    var contentState: JSONValue?
    /// `attributes-type`.
    var attributesType: JSONValue?
    /// `attributes`.
    var attributes: JSONValue?
    /// `relevance-score`.
    var relevanceScore: JSONValue?
    /// `input-push-token`.
    var inputPushToken: JSONValue?
    /// `input-push-channel` (iOS 18): the broadcast channel a start subscribes to.
    var inputPushChannel: JSONValue?

    init() {}

    /// The fields of a parsed `aps` dictionary.
    init(_ aps: [String: JSONValue]) {
        hasAlert = aps["alert"] != nil
        alert = aps["alert"]
        event = aps["event"]
        timestamp = aps["timestamp"]
        staleDate = aps["stale-date"]
        dismissalDate = aps["dismissal-date"]
        contentState = aps["content-state"]
        attributesType = aps["attributes-type"]
        attributes = aps["attributes"]
        relevanceScore = aps["relevance-score"]
        inputPushToken = aps["input-push-token"]
        inputPushChannel = aps["input-push-channel"]
    }
}

/// Reads a push's body as far as the checks and the simulated device need: whether
/// it is a JSON object with an `aps` object, and the `aps` members a device reads.
///
/// Most payloads are plain: printable ASCII strings without escapes, short numbers
/// without exponents, little nesting. Such a body is checked by one pass over its
/// bytes (``PlainJSONScanner``), and only the `aps` members a device reads are
/// turned into ``JSONValue``s, exactly as ``JSONValue/init(parsing:maximumDepth:)``
/// makes them. Any other body, well-formed or not, is left to that parser, which
/// has the last word: the pass never refuses a body, it only gives up.
enum PushPayload {
    /// Why a body is no payload; see ``RequestChecks/payload(_:bytes:pushType:into:)``.
    enum Problem: Error {
        case notJSON, notObject, noAPS, apsNotObject
    }

    /// Reads the `aps` fields of `body`, whose bytes are `bytes`, into `fields`: all
    /// of them when `liveActivity`, otherwise only ``APSFields/hasAlert``.
    static func read(
        _ body: Data, bytes: UnsafeRawBufferPointer, liveActivity: Bool, into fields: inout APSFields
    ) throws(Problem) {
        let scanned: PlainJSONScanner.Outcome? = {
            let scanner = PlainJSONScanner(bytes: bytes.bindMemory(to: UInt8.self))
            var members = APSMembers()
            let outcome = scanner.scanDocument(noting: &members, positions: liveActivity)
            guard outcome == .aps else { return outcome }
            fields.hasAlert = members.hasAlert
            guard liveActivity else { return outcome }
            return members.read(into: &fields, scanner: scanner) ? outcome : nil
        }()
        switch scanned {
        case .aps?: return
        case .notObject?: throw .notObject
        case .noAPS?: throw .noAPS
        case .apsNotObject?: throw .apsNotObject
        case nil: break
        }
        guard let parsed = try? JSONValue(parsing: body, repeatedKeys: .lastWins) else { throw .notJSON }
        guard let object = parsed.objectValue else { throw .notObject }
        guard let aps = object["aps"] else { throw .noAPS }
        guard let members = aps.objectValue else { throw .apsNotObject }
        fields = APSFields(members)
    }
}

/// An `aps` member a device reads.
enum APSField {
    case alert, event, timestamp, staleDate, dismissalDate, contentState, attributesType, attributes
    case relevanceScore, inputPushToken, inputPushChannel

    /// The member's name.
    var name: StaticString {
        switch self {
        case .alert: "alert"
        case .event: "event"
        case .timestamp: "timestamp"
        case .staleDate: "stale-date"
        case .dismissalDate: "dismissal-date"
        case .contentState: "content-state"
        case .attributesType: "attributes-type"
        case .attributes: "attributes"
        case .relevanceScore: "relevance-score"
        case .inputPushToken: "input-push-token"
        case .inputPushChannel: "input-push-channel"
        }
    }

    /// The field named by `key`, the bytes of a name without escapes.
    init?(_ key: UnsafeBufferPointer<UInt8>) {
        let candidates: (APSField, APSField?)
        switch key.count {
        case 5: candidates = (.alert, .event)
        case 9: candidates = (.timestamp, nil)
        case 10: candidates = (.staleDate, .attributes)
        case 13: candidates = (.contentState, nil)
        case 14: candidates = (.dismissalDate, nil)
        case 15: candidates = (.attributesType, .relevanceScore)
        case 16: candidates = (.inputPushToken, nil)
        case 18: candidates = (.inputPushChannel, nil)
        default: return nil
        }
        if candidates.0.isNamed(key) {
            self = candidates.0
        } else if let second = candidates.1, second.isNamed(key) {
            self = second
        } else {
            return nil
        }
    }

    private func isNamed(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        let name = self.name
        guard key.count == name.utf8CodeUnitCount else { return false }
        return memcmp(key.baseAddress!, name.utf8Start, key.count) == 0
    }
}

/// Where a scan found the `aps` members a device reads: the last of each name, as
/// in a parsed object.
struct APSMembers {
    /// Whether `aps` has an `alert` member.
    var hasAlert = false
    private var alert: Span?
    private var event: Span?
    private var timestamp: Span?
    private var staleDate: Span?
    private var dismissalDate: Span?
    private var contentState: Span?
    private var attributesType: Span?
    private var attributes: Span?
    private var relevanceScore: Span?
    private var inputPushToken: Span?
    private var inputPushChannel: Span?

    /// A range of bytes, kept small (a payload is a few kilobytes at most).
    private struct Span {
        var start: Int32
        var end: Int32
    }

    /// Notes that member `field` lies at `range`.
    mutating func found(_ field: APSField, at range: Range<Int>) {
        let span = Span(start: Int32(range.lowerBound), end: Int32(range.upperBound))
        switch field {
        case .alert:
            hasAlert = true
            alert = span
        case .event: event = span
        case .timestamp: timestamp = span
        case .staleDate: staleDate = span
        case .dismissalDate: dismissalDate = span
        case .contentState: contentState = span
        case .attributesType: attributesType = span
        case .attributes: attributes = span
        case .relevanceScore: relevanceScore = span
        case .inputPushToken: inputPushToken = span
        case .inputPushChannel: inputPushChannel = span
        }
    }

    /// Where member `field` lies, if found.
    func range(of field: APSField) -> Range<Int>? {
        let span: Span? = switch field {
        case .alert: alert
        case .event: event
        case .timestamp: timestamp
        case .staleDate: staleDate
        case .dismissalDate: dismissalDate
        case .contentState: contentState
        case .attributesType: attributesType
        case .attributes: attributes
        case .relevanceScore: relevanceScore
        case .inputPushToken: inputPushToken
        case .inputPushChannel: inputPushChannel
        }
        return span.map { Int($0.start)..<Int($0.end) }
    }

    /// Reads every field's value from the text `scanner` accepted into `fields`;
    /// `false` if a value cannot be read after all.
    func read(into fields: inout APSFields, scanner: PlainJSONScanner) -> Bool {
        var complete = true
        func value(_ field: APSField) -> JSONValue? {
            guard let range = range(of: field) else { return nil }
            let value = scanner.value(at: range)
            if value == nil { complete = false }
            return value
        }
        fields.alert = value(.alert)
        fields.event = value(.event)
        fields.timestamp = value(.timestamp)
        fields.staleDate = value(.staleDate)
        fields.dismissalDate = value(.dismissalDate)
        fields.contentState = value(.contentState)
        fields.attributesType = value(.attributesType)
        fields.attributes = value(.attributes)
        fields.relevanceScore = value(.relevanceScore)
        fields.inputPushToken = value(.inputPushToken)
        fields.inputPushChannel = value(.inputPushChannel)
        return complete
    }
}
