import Foundation
import HTTPServer
import IsletCore

/// One cell of an exported row.
enum CSVCell: Sendable {
    /// Text (empty when `nil`); text a spreadsheet would run as a formula is kept
    /// as text (a leading `'`), since ids and tokens come from devices.
    case text(String?)
    /// A whole number (empty when `nil`).
    case number(Int64?)
    /// An RFC 3339 time with milliseconds (empty when `nil`).
    case date(Date?)
    /// `true` or `false`.
    case bool(Bool)

    /// The cell as RFC 4180 writes it: quoted when it holds a comma, a quote or a
    /// line break, its quotes doubled.
    var field: String {
        let text: String
        switch self {
        case .text(let value):
            let value = value ?? ""
            text = value.first.map { "=+-@\t\r".contains($0) } == true ? "'" + value : value
        case .number(let value): text = value.map(String.init) ?? ""
        case .date(let value): text = value.map(APIJSON.rfc3339) ?? ""
        case .bool(let value): text = value ? "true" : "false"
        }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// A CSV export streamed a page at a time: the first page is read before the
/// answer starts (so that a refusal or a failure is an error status, not a short
/// file); each next page once the client has taken most of the one before, so that
/// an export of any size holds one page in memory. A page that fails later cuts the
/// body short (no last chunk): the client never takes a partial file for a whole.
enum CSVExport {
    /// A page of rows and the cursor of the next (`nil`: the last).
    typealias Page = (rows: [[CSVCell]], next: String?)

    /// The answer: `header`, then every row `page` reads, from `page(nil)` on; a
    /// full buffer is waited out on `clock`.
    static func response(
        clock: any Clock<Duration>, filename: String, header: [String], page: @escaping @Sendable (String?) async throws -> Page
    ) async throws -> HTTPResponse {
        let first = try await page(nil)
        return HTTPResponse.stream(
            headers: [
                "Content-Type": ExportRoutes.csv, "Cache-Control": "no-store",
                "Content-Disposition": "attachment; filename=\"\(filename)\"",
            ]
        ) { writer in
            var text = header.map { CSVCell.text($0).field }.joined(separator: ",") + "\r\n"
            var current = first
            while true {
                for row in current.rows { text += row.map(\.field).joined(separator: ",") + "\r\n" }
                guard await EventStreaming.send(text, to: writer, clock: clock) else { return }
                text = ""
                guard let next = current.next else { return }
                do {
                    current = try await page(next)
                } catch {
                    writer.abort()
                    return
                }
            }
        }
    }
}
