import Foundation
import IsletCore

extension Configuration {
    /// One setting of `islet serve`, declared once in ``Configuration/settings``: its
    /// flag, the property it sets, how its text is read and checked, its help line
    /// and its row of docs/configuration.md's table. The environment variable
    /// follows from the flag (`--max-body-bytes` is `ISLET_MAX_BODY_BYTES`), and the
    /// default is the property's initial value in ``Configuration``, shown as the
    /// setting shows values (a setting whose property starts `nil` describes its
    /// default instead).
    public struct Setting: Sendable {
        /// The flag, as `--port`.
        public let flag: String
        /// The environment variable, as `ISLET_PORT`.
        public let environment: String
        /// The default, as text for help.
        public let defaultText: String
        /// What the setting does, in one line for help.
        public let help: String
        /// Whether the flag may stand alone (`--simulator` meaning true).
        public let isSwitch: Bool
        /// Whether the value is never shown, even in the error refusing it.
        public let isSecret: Bool
        /// The default as docs/configuration.md's table shows it (Markdown).
        let documentedDefault: String
        /// What the setting does, as docs/configuration.md's table says it (Markdown).
        let documentation: String
        /// The property the setting sets.
        let property: any PartialKeyPath<Configuration> & Sendable
        /// Reads `value` into the configuration, or answers why it is refused (the
        /// end of a sentence "… is ").
        let apply: @Sendable (inout Configuration, String) -> String?

        /// How errors name the setting: `--port (ISLET_PORT)`.
        public var label: String { "\(flag) (\(environment))" }

        /// A setting whose default is the property's initial value.
        ///
        /// - Parameters:
        ///   - help: the help line; `{range}` stands for the values the setting
        ///     takes as its `SettingValue` says them (`1–200`), and `{default}` for
        ///     its default (`256 MiB`), so that the text follows the parser.
        ///   - readme: the description in docs/configuration.md, in Markdown, when it
        ///     says more than `help` (with the same stand-ins).
        ///   - secret: whether the value is never shown.
        init<Value>(
            _ flag: String, _ property: any WritableKeyPath<Configuration, Value> & Sendable, _ value: SettingValue<Value>,
            help: String, readme: String? = nil, secret: Bool = false
        ) {
            let initial = Configuration()[keyPath: property]
            let shown = value.show(initial)
            self.init(
                flag, property, value, defaultText: shown, documentedDefault: "`\(shown)`",
                spokenDefault: value.spoken?(initial) ?? shown, help: help, readme: readme, secret: secret
            ) { config, parsed in config[keyPath: property] = parsed }
        }

        /// A setting whose property starts `nil`, meaning what `default` says (in
        /// Markdown; help shows it without its backticks).
        init<Value>(
            _ flag: String, _ property: any WritableKeyPath<Configuration, Value?> & Sendable, _ value: SettingValue<Value>,
            default described: String, help: String, readme: String? = nil, secret: Bool = false
        ) {
            let plain = described.replacingOccurrences(of: "`", with: "")
            self.init(
                flag, property, value, defaultText: plain, documentedDefault: described, spokenDefault: plain, help: help,
                readme: readme, secret: secret
            ) { config, parsed in config[keyPath: property] = parsed }
        }

        private init<Value>(
            _ flag: String, _ property: any PartialKeyPath<Configuration> & Sendable, _ value: SettingValue<Value>,
            defaultText: String, documentedDefault: String, spokenDefault: String, help: String, readme: String?,
            secret: Bool, set: @escaping @Sendable (inout Configuration, Value) -> Void
        ) {
            /// `text` with its stand-ins for the range and the default filled in.
            func filled(_ text: String) -> String {
                precondition(!text.contains("{range}") || value.range != nil, "\(flag) says {range}, but takes no range")
                return text.replacingOccurrences(of: "{range}", with: value.range ?? "")
                    .replacingOccurrences(of: "{default}", with: spokenDefault)
            }
            self.flag = flag
            self.environment = "ISLET_" + flag.dropFirst(2).uppercased().replacingOccurrences(of: "-", with: "_")
            self.defaultText = defaultText
            self.documentedDefault = documentedDefault
            self.help = filled(help)
            self.documentation = filled(readme ?? help)
            self.isSwitch = value.isSwitch
            self.isSecret = secret
            self.property = property
            self.apply = { config, text in
                do throws(SettingValue<Value>.Refusal) {
                    set(&config, try value.read(text))
                    return nil
                } catch {
                    return error.reason
                }
            }
        }
    }
}

/// How a setting's text is read into a value, checked, and a value shown as text.
struct SettingValue<Value>: Sendable {
    /// Why a text is refused: the end of a sentence "… is ", as `not a port
    /// number (0-65535)`.
    struct Refusal: Error {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// The value `text` gives, or why it is refused.
    let read: @Sendable (String) throws(Refusal) -> Value
    /// A value as help and docs/configuration.md show it.
    let show: @Sendable (Value) -> String
    /// Whether a flag alone means a value (true).
    var isSwitch = false
    /// The values `read` takes, as a sentence says them (`1–200`, `above 0, at
    /// most 720`); nil when it takes no range.
    var range: String?
    /// A value as a sentence says it (`256 MiB`); nil: as `show` shows it.
    var spoken: (@Sendable (Value) -> String)?
}

extension SettingValue where Value == Int {
    /// A TCP port; 0 picks a free one.
    static var port: Self { integer(0...65_535, refusal: "not a port number (0-65535)") }

    /// A whole number in `range`; the refusal names it with `noun` (`a count from 1 to 200`).
    static func count(_ range: ClosedRange<Int>, _ noun: String = "a count") -> Self {
        integer(range, refusal: "not \(noun) from \(range.lowerBound) to \(range.upperBound)")
    }

    /// A size in bytes in `range`; a sentence says a size in the largest unit that
    /// divides it (`256 MiB`).
    static func bytes(_ range: ClosedRange<Int>) -> Self {
        var value = integer(range, refusal: "not a size from \(range.lowerBound) to \(range.upperBound) bytes")
        value.range = "\(spokenSize(range.lowerBound))–\(spokenSize(range.upperBound))"
        value.spoken = spokenSize
        return value
    }

    /// `bytes` in GiB, MiB or KiB when it is a whole number of one, else in bytes.
    static func spokenSize(_ bytes: Int) -> String {
        for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] where bytes != 0 && bytes % (1 << shift) == 0 {
            return "\(bytes >> shift) \(unit)"
        }
        return "\(bytes) bytes"
    }

    private static func integer(_ range: ClosedRange<Int>, refusal: String) -> Self {
        Self(read: { text throws(Refusal) in
            guard let number = Int(text), range.contains(number) else { throw Refusal(refusal) }
            return number
        }, show: { String($0) }, range: "\(range.lowerBound)–\(range.upperBound)")
    }
}

extension SettingValue where Value == Double {
    /// A finite number of `unit` in `range` (`not a number of seconds from 0.1 to 3600`).
    static func number(_ range: ClosedRange<Double>, of unit: String) -> Self {
        var value = number(
            where: { range.contains($0) },
            refusal: "not a number of \(unit) from \(shown(range.lowerBound)) to \(shown(range.upperBound))")
        value.range = "\(shown(range.lowerBound))–\(shown(range.upperBound))"
        return value
    }

    /// A finite number of `unit` above `lower`, at most `upper` (`not a number of
    /// hours above 0 (at most 720)`).
    static func number(above lower: Double, atMost upper: Double, of unit: String) -> Self {
        let range = "above \(shown(lower)), at most \(shown(upper))"
        var value = number(
            where: { $0 > lower && $0 <= upper }, refusal: "not a number of \(unit) above \(shown(lower)) (at most \(shown(upper)))")
        value.range = range
        return value
    }

    /// A rate limit's requests a second, within ``RateLimit/perSecondRange``: from
    /// one request an hour to a million a second.
    static var requestsPerSecond: Self {
        var value = number(RateLimit.perSecondRange, of: "requests a second")
        value.range = "1/3600, one an hour, to 1000000"
        return value
    }

    /// A finite number that `accepts` takes.
    static func number(where accepts: @escaping @Sendable (Double) -> Bool, refusal: String) -> Self {
        Self(read: { text throws(Refusal) in
            guard let number = Double(text), number.isFinite, accepts(number) else { throw Refusal(refusal) }
            return number
        }, show: shown)
    }

    /// A number as help shows it: `30` rather than `30.0`.
    private static func shown(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }
}

extension SettingValue where Value == Bool {
    /// True or false in the usual spellings; the flag alone means true.
    static var `switch`: Self {
        Self(read: { text throws(Refusal) in
            switch text.lowercased() {
            case "true", "1", "yes", "on": return true
            case "false", "0", "no", "off": return false
            default: throw Refusal("not true or false")
            }
        }, show: { String($0) }, isSwitch: true)
    }
}

extension SettingValue where Value: CaseIterable & RawRepresentable<String> & Sendable {
    /// One of the type's cases by name, in any case; the refusal lists them
    /// (`not a log level (one of debug, info, …)`).
    static func choice(_ noun: String) -> Self {
        Self(read: { text throws(Refusal) in
            guard let value = Value(rawValue: text.lowercased()) else {
                throw Refusal("not \(noun) (one of \(Value.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            return value
        }, show: \.rawValue)
    }
}

extension SettingValue where Value == String {
    /// Any text that `accepts` takes, kept as given.
    static func text(_ accepts: @escaping @Sendable (String) throws(Refusal) -> Void) -> Self {
        Self(read: { text throws(Refusal) in
            try accepts(text)
            return text
        }, show: { $0 })
    }

    /// Any text but the empty one, which is refused with `reason` (`a file path
    /// is required`).
    static func required(_ reason: String) -> Self {
        text { text throws(Refusal) in
            guard !text.isEmpty else { throw Refusal(reason) }
        }
    }

    /// An `https` (or `http`) URL with a host.
    static var url: Self {
        text { text throws(Refusal) in
            guard let url = URL(string: text), let scheme = url.scheme, ["https", "http"].contains(scheme), url.host != nil else {
                throw Refusal("not an https:// URL with a host")
            }
        }
    }

    /// An address the API can listen on without asking a name server: an IPv4 or
    /// IPv6 literal, or `localhost`.
    static var listeningAddress: Self {
        text { text throws(Refusal) in
            guard !text.isEmpty else { throw Refusal("an address is required") }
            guard isListeningAddress(text) else {
                throw Refusal("not an IP address (such as 127.0.0.1, 0.0.0.0 or ::1) or localhost")
            }
        }
    }

    /// Whether `value` is an IPv4 or IPv6 address literal, or `localhost`.
    static func isListeningAddress(_ value: String) -> Bool {
        if value == "localhost" { return true }
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, value, &v4) == 1 || inet_pton(AF_INET6, value, &v6) == 1
    }
}
