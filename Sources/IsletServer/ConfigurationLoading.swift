public import IsletCore

// Reading a configuration: the `ISLET_*` environment, then the flags (a flag wins),
// over the defaults; every value checked before anything starts.
extension Configuration {
    /// Reads the environment's `ISLET_*` variables, then `arguments` (flags of the
    /// form `--name value` or `--name=value`), over the defaults. Answers the
    /// configuration and warnings (such as unknown `ISLET_*` variables).
    public static func load(
        arguments: [String],
        environment: [String: String]
    ) throws(ConfigurationError) -> (configuration: Configuration, warnings: [String]) {
        let known = Set(settings.map(\.environment))
        let warnings = environment.keys.sorted()
            .filter { $0.hasPrefix("ISLET_") && !known.contains($0) }
            .map { "ignoring unknown environment variable \($0)" }
        // Flags first, read but not yet applied: a setting a flag gives is never
        // read from the environment, so a bad value there that a flag overrides is
        // no error.
        let flags = try readFlags(arguments)
        let given = Set(flags.map(\.setting.flag))
        var config = Configuration()
        for setting in settings where !given.contains(setting.flag) {
            guard let value = environment[setting.environment] else { continue }
            if let problem = setting.apply(&config, value) {
                let shown = setting.isSecret
                    ? "the value of \(setting.environment)" : "the value of \(setting.environment), \(quoted(shownValue(value))),"
                throw ConfigurationError(.invalidValue, setting: setting.label, message: "\(shown) is \(problem)")
            }
        }
        for (setting, value) in flags {
            if let problem = setting.apply(&config, value) {
                let shown = setting.isSecret ? "the value given to \(setting.flag)" : quoted(shownValue(value))
                throw ConfigurationError(.invalidValue, setting: setting.label, message: "\(shown) is \(problem)")
            }
        }
        return (config, warnings)
    }

    /// The settings `arguments` give, with their values as given, in order: a
    /// switch alone means true; any other flag takes the next argument unless it
    /// has its value after `=`.
    static func readFlags(_ arguments: [String]) throws(ConfigurationError) -> [(setting: Setting, value: String)] {
        var flags: [(setting: Setting, value: String)] = []
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            guard argument.hasPrefix("--") else {
                throw ConfigurationError(.unknownOption, setting: argument, message: "expected a flag such as --port; see --help")
            }
            let name: String
            var value: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            } else {
                name = argument
            }
            guard let setting = settings.first(where: { $0.flag == name }) else {
                throw ConfigurationError(.unknownOption, setting: name, message: "no such setting; see --help")
            }
            if value == nil && setting.isSwitch {
                value = "true"
            } else if value == nil {
                guard let next = remaining.popFirst() else {
                    throw ConfigurationError(.missingValue, setting: setting.label, message: "a value is required")
                }
                value = next
            }
            flags.append((setting, value ?? ""))
        }
        return flags
    }

    /// `value` in double quotes.
    private static func quoted(_ value: String) -> String { "\"\(value)\"" }

    /// A value as an error may show it: any password in it hidden.
    private static func shownValue(_ value: String) -> String {
        Redaction.hidingPasswords(in: value)
    }
}
