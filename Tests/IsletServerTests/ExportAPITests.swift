import Foundation
import IsletCore
import Testing
@testable import IsletServer

/// The app's push rows by period and reason (what an overview's failure reason
/// links to), and the views' CSV exports, streamed.
@Suite("Pushes by reason and CSV exports through the API")
struct ExportAPITests {
    /// The rows of a CSV text (RFC 4180: quoted fields, doubled quotes), read back.
    static func rows(_ text: String) -> [[String]] {
        var rows: [[String]] = []
        var row: [String] = []
        var field = ""
        var quoted = false
        var characters = Array(text).makeIterator()
        var pending: Character? = nil
        while let c = pending ?? characters.next() {
            pending = nil
            if quoted {
                if c == "\"" {
                    if let next = characters.next() {
                        if next == "\"" { field.append("\"") } else { quoted = false; pending = next }
                    } else { quoted = false }
                } else { field.append(c) }
            } else if c == "\"" {
                quoted = true
            } else if c == "," {
                row.append(field)
                field = ""
            } else if c == "\r\n" || c == "\n" {
                row.append(field)
                rows.append(row)
                row = []
                field = ""
            } else {
                field.append(c)
            }
        }
        return rows
    }

    @Test func aFailedPushIsFoundByItsReasonAndEachViewExportsAsCSV() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            // One device's token APNs refuses; another's id would be a formula in a spreadsheet.
            let dead = ServerHarness.token()
            try h.sandbox.engine.registerToken(dead, kind: .device, environment: .production)
            try h.production.engine.registerToken(dead, kind: .device, environment: .sandbox)
            try await h.registerDevice(app, "phone-1", apnsToken: dead, userID: "user-1")
            let formula = #"=HYPERLINK("x",1)"#
            let encoded = try #require(formula.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            try await h.registerDevice(app, encoded, apnsToken: ServerHarness.token(), userID: "user-1")
            let sent = try await h.call("POST", "/v1/apps/\(app.id)/notifications", key: app.serverKey, json: [
                "audience": ["user_ids": ["user-1"]], "alert": ["title": "Hello", "body": "World"],
            ])
            #expect(sent.status == 202, "\(sent.json)")
            let base = "/v1/apps/\(app.id)"
            #expect(try await h.eventually {
                try await h.call("GET", base + "/pushes?status=failed", key: app.serverKey)["items"]?.arrayValue?.count == 1
            })
            let failed = try await h.call("GET", base + "/pushes?status=failed&period=hour", key: app.serverKey)
            let reason = try #require(failed["items"]?.arrayValue?.first?["reason"]?.stringValue)
            #expect(failed["items"]?.arrayValue?.first?["device_id"] == "phone-1")
            // The reason the overview counts, and the pushes it links to.
            let overview = try await h.call("GET", base + "/overview?period=hour", key: app.serverKey)
            #expect(overview["failures"]?.arrayValue?.first?["reason"]?.stringValue == reason, "\(overview.json)")
            // The dead token Islet acted on (the device marked unreachable).
            #expect(overview["totals"]?["dead_tokens"] == 1, "\(overview.json)")
            let byReason = try await h.call(
                "GET", base + "/pushes?status=failed&reason=\(reason)", key: app.serverKey)
            #expect(byReason["items"]?.arrayValue?.count == 1 && byReason["next_cursor"] == .null)
            #expect(try await h.call("GET", base + "/pushes?reason=Other", key: app.serverKey)["items"]?.arrayValue?.isEmpty == true)
            // Without a filter: both alerts' rows, newest first, a page at a time.
            let all = try await h.call("GET", base + "/pushes?limit=1", key: app.serverKey)
            #expect(all["items"]?.arrayValue?.count == 1 && all["next_cursor"] != .null, "\(all.json)")

            let pushes = try await h.call("GET", base + "/exports/pushes.csv?status=failed", key: app.serverKey)
            #expect(pushes.status == 200 && pushes.headers["content-type"]?.hasPrefix("text/csv") == true, "\(pushes.headers)")
            #expect(pushes.headers["content-disposition"]?.contains("pushes.csv") == true)
            let pushRows = Self.rows(pushes.json.stringValue ?? "")
            #expect(pushRows.first?.prefix(3) == ["created_at", "activity_id", "device_id"], "\(pushRows)")
            #expect(pushRows.count == 2 && pushRows.last?[2] == "phone-1" && pushRows.last?.contains(reason) == true)

            let devices = try await h.call("GET", base + "/exports/devices.csv", key: app.serverKey)
            let deviceRows = Self.rows(devices.json.stringValue ?? "")
            #expect(deviceRows.map { $0.first ?? "" } == ["device_id", "'" + formula, "phone-1"], "\(deviceRows)")
            #expect(deviceRows.dropFirst().allSatisfy { $0.count == deviceRows[0].count })
            // Tokens shortened, in the file as in the API.
            #expect(!(devices.json.stringValue ?? "").contains(dead) && deviceRows.last?[5] == String(dead.prefix(8)))
            #expect(deviceRows.last?[7] == "false", "phone-1 became unreachable: \(deviceRows)")

            // The activities' export keeps the list's filters; an activity's sends export.
            try await h.registerStartable(app, "phone-3", userID: "user-3")
            #expect(try await h.start(app, "order-1", audience: ["user_ids": ["user-3"]]).status == 202)
            let activities = Self.rows(try await h.call("GET", base + "/exports/activities.csv?status=started&activity_type=DeliveryAttributes", key: app.serverKey).json.stringValue ?? "")
            #expect(activities.count == 2 && activities.last?.first == "order-1", "\(activities)")
            let ended = Self.rows(try await h.call("GET", base + "/exports/activities.csv?status=ended", key: app.serverKey).json.stringValue ?? "")
            #expect(ended.count == 1)
            let sends = Self.rows(try await h.call("GET", base + "/activities/order-1/sends.csv", key: app.serverKey).json.stringValue ?? "")
            #expect(sends.count == 2 && sends.last?[2] == "start", "\(sends)")
            #expect(sends.last.flatMap { try? JSONValue(parsing: Data($0[7].utf8)) } == ["status": "preparing", "eta": 25])

            // The app's backend only; bad filters are named before anything is written.
            for path in ["/pushes", "/exports/pushes.csv", "/exports/devices.csv", "/exports/activities.csv", "/activities/order-1/sends.csv"] {
                #expect(try await h.call("GET", base + path, key: app.deviceKey).status == 403, "\(path)")
            }
            #expect(try await h.call("GET", base + "/activities/order-9/sends.csv", key: app.serverKey).status == 404)
            for (path, field) in [("/pushes?limit=0", "limit"), ("/pushes?limit=1001", "limit"), ("/pushes?cursor=-0", "cursor"),
                                  ("/exports/pushes.csv?period=month", "period"), ("/exports/pushes.csv?status=sent", "status"),
                                  ("/exports/activities.csv?status=done", "status"), ("/pushes?reason=", "reason")] {
                let refused = try await h.call("GET", base + path, key: app.serverKey)
                #expect(refused.status == 422 && refused.errorFields == [field], "\(path): \(refused.json)")
            }
        }
    }

    @Test func aLargeExportStreamsEveryRowInPages() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            // More than two pages of 500.
            for index in 0..<1_100 {
                try await h.registerDevice(app, String(format: "d-%05d", index))
            }
            let reply = try await h.call("GET", "/v1/apps/\(app.id)/exports/devices.csv", key: app.serverKey)
            let rows = Self.rows(reply.json.stringValue ?? "")
            #expect(rows.count == 1_101)
            #expect(rows.dropFirst().map { $0[0] } == (0..<1_100).map { String(format: "d-%05d", $0) })
        }
    }
}

/// A CSV cell as the exports write it.
@Suite("CSV cells")
struct CSVCellTests {
    @Test func fieldsAreQuotedWhenTheyMustBeAndFormulasStayText() {
        #expect(CSVCell.text("plain").field == "plain")
        #expect(CSVCell.text(nil).field == "")
        #expect(CSVCell.text("a,b").field == "\"a,b\"")
        #expect(CSVCell.text("say \"hi\"").field == "\"say \"\"hi\"\"\"")
        #expect(CSVCell.text("two\nlines").field == "\"two\nlines\"")
        #expect(CSVCell.text("cr\rhere").field == "\"cr\rhere\"")
        // What a spreadsheet would run stays text; the quote goes inside the quoting.
        for lead in ["=", "+", "-", "@", "\t", "\r"] {
            #expect(CSVCell.text(lead + "1").field.contains("'" + lead + "1"), "\(lead.debugDescription)")
        }
        #expect(CSVCell.text(#"=HYPERLINK("x",1)"#).field == #""'=HYPERLINK(""x"",1)""#)
        // Numbers are numbers: negative ones too, at the extremes.
        #expect(CSVCell.number(-1).field == "-1" && CSVCell.number(0).field == "0")
        #expect(CSVCell.number(.min).field == "-9223372036854775808" && CSVCell.number(.max).field == "9223372036854775807")
        #expect(CSVCell.number(nil).field == "" && CSVCell.date(nil).field == "")
        #expect(CSVCell.date(Date(timeIntervalSince1970: 0)).field == "1970-01-01T00:00:00.000Z")
        #expect(CSVCell.bool(true).field == "true" && CSVCell.bool(false).field == "false")
        // Text beyond ASCII is written as it is.
        #expect(CSVCell.text("Zürich 東京").field == "Zürich 東京")
    }
}
