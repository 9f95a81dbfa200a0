import Foundation

// What `islet serve --help` and docs/configuration.md say about the settings, both
// written from their declarations in ConfigurationSettings.swift.
extension Configuration {
    /// The usage text for `islet serve --help`, listing every setting.
    public static var helpText: String {
        var lines = ["Usage: islet serve [options]", "", "Options (each also an environment variable):"]
        for setting in settings {
            // A flag longer than the column keeps its whole name, and a space.
            let name = "  \(setting.flag)\(setting.isSwitch ? "" : " VALUE")"
            lines.append(name.padding(toLength: max(34, name.count + 1), withPad: " ", startingAt: 0)
                + "\(setting.help) [\(setting.environment), default \(setting.defaultText)]")
        }
        return lines.joined(separator: "\n")
    }

    /// The table of docs/configuration.md, in Markdown: a row per
    /// setting with its flag, variable, default and meaning.
    public static var referenceTable: String {
        var lines = ["| Flag | Environment | Default | Meaning |", "|---|---|---|---|"]
        for setting in settings {
            lines.append("| `\(setting.flag)` | `\(setting.environment)` | \(setting.documentedDefault) | \(setting.documentation) |")
        }
        return lines.joined(separator: "\n")
    }
}
