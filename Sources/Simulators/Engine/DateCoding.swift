import Foundation

/// Dates in the inspection JSON are ISO 8601 text in UTC with milliseconds, as
/// `2027-01-15T08:00:00.000Z`, whatever date strategy the encoder was given.
enum DateCoding {
    static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func text(_ date: Date) -> String { date.formatted(style) }

    static func date(_ text: String, codingPath: [any CodingKey]) throws -> Date {
        do {
            return try style.parse(text)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "not an ISO 8601 date: \(text)"))
        }
    }
}

extension KeyedEncodingContainer {
    mutating func encodeDate(_ date: Date, forKey key: Key) throws {
        try encode(DateCoding.text(date), forKey: key)
    }

    mutating func encodeDateIfPresent(_ date: Date?, forKey key: Key) throws {
        if let date { try encodeDate(date, forKey: key) }
    }
}

extension KeyedDecodingContainer {
    func decodeDate(forKey key: Key) throws -> Date {
        try DateCoding.date(decode(String.self, forKey: key), codingPath: codingPath + [key])
    }

    func decodeDateIfPresent(forKey key: Key) throws -> Date? {
        guard let text = try decodeIfPresent(String.self, forKey: key) else { return nil }
        return try DateCoding.date(text, codingPath: codingPath + [key])
    }
}
