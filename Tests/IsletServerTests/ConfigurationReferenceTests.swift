import Foundation
@testable import IsletServer
import Testing

/// The table of docs/configuration.md is written from the settings' declarations:
/// a setting added, renamed or redescribed without its row fails here.
@Suite("Configuration reference")
struct ConfigurationReferenceTests {
    static let page = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/configuration.md")

    /// The first Markdown table after the page's title, `# Configuration`.
    static func documentedTable() throws -> String {
        let text = try String(contentsOf: page, encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        let section = try #require(lines.firstIndex(of: "# Configuration"), "docs/configuration.md has no # Configuration title")
        let rest = lines[section...]
        let start = try #require(rest.firstIndex { $0.hasPrefix("|") }, "docs/configuration.md has no table")
        return rest[start...].prefix { $0.hasPrefix("|") }.joined(separator: "\n")
    }

    @Test func theDocumentedTableIsTheDeclaredOne() throws {
        let documented = try Self.documentedTable()
        let declared = Configuration.referenceTable
        let documentedRows = documented.components(separatedBy: "\n")
        let declaredRows = declared.components(separatedBy: "\n")
        for row in declaredRows where !documentedRows.contains(row) {
            Issue.record("docs/configuration.md lacks or words otherwise the row\n\(row)")
        }
        for row in documentedRows where !declaredRows.contains(row) {
            Issue.record("docs/configuration.md has a row no setting declares\n\(row)")
        }
        #expect(documented == declared, "docs/configuration.md's table should read (from Configuration.settings):\n\(declared)")
    }

    @Test func rangesAndSizesInTheProseAreThoseOfTheParser() {
        // A setting's text names its range and its default through stand-ins, so that
        // a changed range or default changes the help and the documented row with it.
        let pool = Configuration.Setting(
            "--database-pool-size", \.databasePoolSize, .count(2...7), help: "Connections ({range}).", readme: "At most {range}.")
        #expect(pool.help == "Connections (2–7).")
        #expect(pool.documentation == "At most 2–7.")
        let timeout = Configuration.Setting(
            "--body-timeout-seconds", \.bodyTimeoutSeconds, .number(0.5...90, of: "seconds"), help: "Seconds ({range}).")
        #expect(timeout.documentation == "Seconds (0.5–90).")
        let session = Configuration.Setting(
            "--dashboard-session-hours", \.dashboardSessionHours, .number(above: 0, atMost: 48, of: "hours"), help: "Hours ({range}).")
        #expect(session.help == "Hours (above 0, at most 48).")
        var configuration = Configuration()
        #expect(session.apply(&configuration, "49") == "not a number of hours above 0 (at most 48)")
        #expect(session.apply(&configuration, "48") == nil && configuration.dashboardSessionHours == 48)
        let buffered = Configuration.Setting(
            "--max-buffered-body-bytes", \.maxBufferedBodyBytes, .bytes(1...(1 << 40)), help: "Bytes ({default} by default).")
        #expect(buffered.help == "Bytes (\(Configuration().maxBufferedBodyBytes >> 20) MiB by default).")
        #expect(SettingValue<Int>.spokenSize(3 << 30) == "3 GiB" && SettingValue<Int>.spokenSize(1_536) == "1536 bytes")
        // The declared settings say the ranges their parsers take.
        let declared = Dictionary(uniqueKeysWithValues: Configuration.settings.map { ($0.flag, $0.documentation) })
        #expect(declared["--event-retention-days"]?.hasSuffix("(1–365).") == true)
        #expect(declared["--dashboard-session-hours"]?.hasSuffix("(above 0, at most 720).") == true)
        #expect(declared["--max-buffered-body-bytes-per-app"]?.contains("(64 MiB by default)") == true)
    }

    @Test func everySettingHasItsRowAndHelpLine() {
        let rows = Configuration.referenceTable.components(separatedBy: "\n")
        let help = Configuration.helpText.components(separatedBy: "\n")
        #expect(rows.count == Configuration.settings.count + 2)
        #expect(help.count == Configuration.settings.count + 3)
        for (index, setting) in Configuration.settings.enumerated() {
            #expect(rows[index + 2].hasPrefix("| `\(setting.flag)` | `\(setting.environment)` | "))
            #expect(help[index + 3].hasPrefix("  \(setting.flag) "))
            #expect(help[index + 3].hasSuffix("[\(setting.environment), default \(setting.defaultText)]"))
        }
    }
}
