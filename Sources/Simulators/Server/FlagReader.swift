import IsletCore

/// Reads a command's flags, each `--name value` or `--name=value`, one at a time:
/// the loop both `islet sim` parsers share.
struct FlagReader {
    private let arguments: [String]
    private var index = 0

    init(_ arguments: [String]) {
        self.arguments = arguments
    }

    /// The next flag, and its value when written `--name=value`; `nil` at the end.
    mutating func next() -> (flag: String, inline: String?)? {
        guard index < arguments.count else { return nil }
        let argument = arguments[index]
        index += 1
        if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
            return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
        }
        return (argument, nil)
    }

    /// The value of `flag`: the inline one, else the next argument.
    mutating func value(for flag: String, inline: String?) throws(ConfigurationError) -> String {
        if let inline { return inline }
        guard index < arguments.count else { throw ConfigurationError(.missingValue, setting: flag, message: "a value is required") }
        index += 1
        return arguments[index - 1]
    }

    /// `text` as a whole number in `range`, or a refusal naming `flag`.
    static func integer(_ flag: String, _ text: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let number = Int(text), range.contains(number) else {
            throw ConfigurationError(
                .invalidValue, setting: flag, message: "\"\(text)\" is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}
