import Foundation
import IsletServer
import Testing

/// The README's Configuration table is written from the settings' declarations:
/// a setting added, renamed or redescribed without its row fails here.
@Suite("Configuration reference")
struct ConfigurationReferenceTests {
    static let readme = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("README.md")

    /// The first Markdown table after `## Configuration`.
    static func documentedTable() throws -> String {
        let text = try String(contentsOf: readme, encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        let section = try #require(lines.firstIndex(of: "## Configuration"), "README.md has no ## Configuration section")
        let rest = lines[section...]
        let start = try #require(rest.firstIndex { $0.hasPrefix("|") }, "the Configuration section has no table")
        return rest[start...].prefix { $0.hasPrefix("|") }.joined(separator: "\n")
    }

    @Test func theReadmeTableIsTheDeclaredOne() throws {
        let documented = try Self.documentedTable()
        let declared = Configuration.referenceTable
        let documentedRows = documented.components(separatedBy: "\n")
        let declaredRows = declared.components(separatedBy: "\n")
        for row in declaredRows where !documentedRows.contains(row) {
            Issue.record("README.md lacks or words otherwise the row\n\(row)")
        }
        for row in documentedRows where !declaredRows.contains(row) {
            Issue.record("README.md has a row no setting declares\n\(row)")
        }
        #expect(documented == declared, "README.md's Configuration table should read (from Configuration.settings):\n\(declared)")
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
