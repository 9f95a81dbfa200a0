/// An IPv4 or IPv6 address, parsed from its numeric text or taken from its bytes, and
/// classified by where it leads (``NetworkAddressScope``): what decides whether a
/// webhook may be sent to it.
///
/// Only numeric forms are read: dotted-quad IPv4 (four decimal parts, no leading
/// zeros, so that nothing is read as octal) and RFC 4291 IPv6 text, with `::` and a
/// trailing dotted quad; no brackets, no zone (`%eth0`), no host names.
public struct NetworkAddress: Hashable, Sendable, CustomStringConvertible {
    /// The two families.
    public enum Family: Hashable, Sendable {
        /// A 32-bit IPv4 address.
        case ipv4
        /// A 128-bit IPv6 address.
        case ipv6
    }

    /// Which family the address is of.
    public let family: Family
    /// The first 64 bits of an IPv6 address; 0 for IPv4.
    private let high: UInt64
    /// The last 64 bits of an IPv6 address, or an IPv4 address in the low 32 bits.
    private let low: UInt64

    /// The IPv4 address whose 32 bits, most significant first, are `value`
    /// (127.0.0.1 is `0x7F00_0001`).
    public init(ipv4 value: UInt32) {
        family = .ipv4
        high = 0
        low = UInt64(value)
    }

    /// The IPv6 address whose first 64 bits are `high` and last 64 bits are `low`.
    public init(ipv6High high: UInt64, low: UInt64) {
        family = .ipv6
        self.high = high
        self.low = low
    }

    /// The address of 4 bytes (IPv4) or 16 bytes (IPv6) in network order, as a socket
    /// address holds them; nil for any other count.
    public init?(bytes: some Collection<UInt8>) {
        switch bytes.count {
        case 4:
            self.init(ipv4: bytes.reduce(0) { $0 << 8 | UInt32($1) })
        case 16:
            let high = bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let low = bytes.dropFirst(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            self.init(ipv6High: high, low: low)
        default:
            return nil
        }
    }

    /// The address `text` spells, or nil when it is not a numeric IPv4 or IPv6 address.
    public init?(_ text: some StringProtocol) {
        let utf8 = Array(text.utf8)
        if let value = Self.parseIPv4(utf8[...]) {
            self.init(ipv4: value)
        } else if let (high, low) = Self.parseIPv6(utf8) {
            self.init(ipv6High: high, low: low)
        } else {
            return nil
        }
    }

    /// The 32 bits of an IPv4 address, most significant first; nil for IPv6.
    public var ipv4Value: UInt32? {
        family == .ipv4 ? UInt32(truncatingIfNeeded: low) : nil
    }

    /// The address in network byte order: 4 or 16 bytes.
    public var bytes: [UInt8] {
        switch family {
        case .ipv4: (0..<4).map { UInt8(truncatingIfNeeded: low >> (24 - 8 * $0)) }
        case .ipv6: (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
        }
    }

    /// The IPv4 address of an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, which a dual
    /// stack socket uses for IPv4 peers); nil otherwise.
    public var mappedIPv4: NetworkAddress? {
        guard family == .ipv6, high == 0, low >> 32 == 0xFFFF else { return nil }
        return NetworkAddress(ipv4: UInt32(truncatingIfNeeded: low))
    }

    /// The IPv4 address an IPv6 address carries for a translator to reach: the mapped
    /// form, NAT64 (64:ff9b::/96) and 6to4 (2002::/16); nil otherwise.
    public var embeddedIPv4: NetworkAddress? {
        guard family == .ipv6 else { return nil }
        if let mapped = mappedIPv4 { return mapped }
        if high == 0x0064_FF9B_0000_0000, low >> 32 == 0 {
            return NetworkAddress(ipv4: UInt32(truncatingIfNeeded: low))
        }
        if high >> 48 == 0x2002 {
            return NetworkAddress(ipv4: UInt32(truncatingIfNeeded: high >> 16))
        }
        return nil
    }

    /// Where the address leads. An IPv6 address that carries an IPv4 address (mapped,
    /// NAT64, 6to4) has the scope of that IPv4 address, unless it is public.
    public var scope: NetworkAddressScope {
        switch family {
        case .ipv4: Self.ipv4Scope(UInt32(truncatingIfNeeded: low))
        case .ipv6: ipv6Scope
        }
    }

    /// Whether a webhook may not be sent to this address (see
    /// ``NetworkAddressScope/isRefusedForWebhooks(allowPrivate:)``).
    public func isRefusedForWebhooks(allowPrivate: Bool) -> Bool {
        scope.isRefusedForWebhooks(allowPrivate: allowPrivate)
    }

    /// Why a webhook may not be sent to this address ("127.0.0.1 is a loopback
    /// address"), or nil when it may.
    public func refusalReason(allowPrivate: Bool) -> String? {
        let scope = scope
        guard scope.isRefusedForWebhooks(allowPrivate: allowPrivate) else { return nil }
        if mappedIPv4 == nil, let embedded = embeddedIPv4, embedded.scope == scope {
            return "\(self) is \(scope.phrase) (it carries \(embedded))"
        }
        return "\(self) is \(scope.phrase)"
    }

    /// The address in its usual text: dotted quad, or RFC 5952 IPv6 (lower case, the
    /// longest run of zero groups shortened to `::`, a mapped address as
    /// `::ffff:a.b.c.d`).
    public var description: String {
        switch family {
        case .ipv4:
            return Self.dottedQuad(UInt32(truncatingIfNeeded: low))
        case .ipv6:
            if let mapped = mappedIPv4 { return "::ffff:\(mapped)" }
            return Self.ipv6Text(high: high, low: low)
        }
    }

    // MARK: Classification

    private var ipv6Scope: NetworkAddressScope {
        if let embedded = embeddedIPv4 {
            let scope = embedded.scope
            // A mapped address is the IPv4 address; a translated one leads wherever
            // its IPv4 address does, and is otherwise public (a NAT64 or 6to4 relay).
            if mappedIPv4 != nil || scope != .public { return scope }
            return .public
        }
        if high == 0 {
            if low == 0 { return .unspecified }
            if low == 1 { return .loopback }
            // The deprecated IPv4-compatible ::a.b.c.d, ::ffff:0:a.b.c.d (SIIT), the rest of ::/64.
            return .reserved
        }
        if high == 0xFD00_0EC2_0000_0000 && low == 0x254 { return .metadata }
        if Self.has(high, prefix: 0xFC00_0000_0000_0000, length: 7) { return .privateNetwork }
        if Self.has(high, prefix: 0xFE80_0000_0000_0000, length: 10) { return .linkLocal }
        if Self.has(high, prefix: 0xFEC0_0000_0000_0000, length: 10) { return .privateNetwork }
        if Self.has(high, prefix: 0xFF00_0000_0000_0000, length: 8) { return .multicast }
        if Self.has(high, prefix: 0x0064_FF9B_0001_0000, length: 48) { return .privateNetwork }
        if high == 0x0100_0000_0000_0000 { return .reserved }  // 100::/64, discard only
        if Self.has(high, prefix: 0x2001_0DB8_0000_0000, length: 32) { return .reserved }
        if Self.has(high, prefix: 0x2000_0000_0000_0000, length: 3) { return .public }
        return .reserved
    }

    private static func ipv4Scope(_ value: UInt32) -> NetworkAddressScope {
        func within(_ a: UInt32, _ b: UInt32, _ c: UInt32, _ d: UInt32, _ length: Int) -> Bool {
            has(UInt64(value) << 32, prefix: UInt64(a << 24 | b << 16 | c << 8 | d) << 32, length: length)
        }
        if value == 0xA9FE_A9FE || value == 0x6464_64C8 { return .metadata }  // 169.254.169.254, 100.100.100.200
        if within(0, 0, 0, 0, 8) { return .unspecified }
        if within(127, 0, 0, 0, 8) { return .loopback }
        if within(10, 0, 0, 0, 8) || within(172, 16, 0, 0, 12) || within(192, 168, 0, 0, 16)
            || within(100, 64, 0, 0, 10)
        {
            return .privateNetwork
        }
        if within(169, 254, 0, 0, 16) { return .linkLocal }
        if value == 0xFFFF_FFFF { return .broadcast }
        if within(224, 0, 0, 0, 4) { return .multicast }
        if within(240, 0, 0, 0, 4) || within(192, 0, 0, 0, 24) || within(192, 0, 2, 0, 24)
            || within(198, 18, 0, 0, 15) || within(198, 51, 100, 0, 24) || within(203, 0, 113, 0, 24)
        {
            return .reserved
        }
        return .public
    }

    /// Whether the first `length` bits of `bits` are those of `prefix`.
    private static func has(_ bits: UInt64, prefix: UInt64, length: Int) -> Bool {
        let mask: UInt64 = length == 0 ? 0 : ~0 << (64 - length)
        return bits & mask == prefix & mask
    }

    // MARK: Text

    private static func dottedQuad(_ value: UInt32) -> String {
        "\(value >> 24).\(value >> 16 & 0xFF).\(value >> 8 & 0xFF).\(value & 0xFF)"
    }

    private static func ipv6Text(high: UInt64, low: UInt64) -> String {
        let groups = (0..<4).map { UInt16(truncatingIfNeeded: high >> (48 - 16 * $0)) }
            + (0..<4).map { UInt16(truncatingIfNeeded: low >> (48 - 16 * $0)) }
        // The longest run of two or more zero groups (the first of equals) becomes `::`.
        var best = (start: -1, count: 0)
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else {
                index += 1
                continue
            }
            let start = index
            while index < 8 && groups[index] == 0 { index += 1 }
            if index - start > best.count { best = (start, index - start) }
        }
        func hex(_ slice: ArraySlice<UInt16>) -> String {
            slice.map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard best.count >= 2 else { return hex(groups[...]) }
        return hex(groups[..<best.start]) + "::" + hex(groups[(best.start + best.count)...])
    }

    // MARK: Parsing

    /// A dotted quad: four decimal parts of 0 to 255, none with a leading zero.
    private static func parseIPv4(_ text: ArraySlice<UInt8>) -> UInt32? {
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            if part.count > 1 && part.first == UInt8(ascii: "0") { return nil }
            let number = part.reduce(UInt32(0)) { $0 * 10 + UInt32($1 - 0x30) }
            guard number <= 255 else { return nil }
            value = value << 8 | number
        }
        return value
    }

    /// RFC 4291 text: eight groups of one to four hex digits, at most one `::` for one
    /// or more zero groups, and a dotted quad in place of the last two groups.
    private static func parseIPv6(_ text: [UInt8]) -> (UInt64, UInt64)? {
        let colon = UInt8(ascii: ":")
        var gap: Int?
        for index in text.indices.dropLast() where text[index] == colon && text[index + 1] == colon {
            guard gap == nil else { return nil }
            gap = index
        }
        func groups(_ side: ArraySlice<UInt8>, last: Bool) -> [UInt16]? {
            guard !side.isEmpty else { return [] }
            let fields = side.split(separator: colon, omittingEmptySubsequences: false)
            var result: [UInt16] = []
            for (position, field) in fields.enumerated() {
                if last && position == fields.count - 1 && field.contains(UInt8(ascii: ".")) {
                    guard let v4 = parseIPv4(field) else { return nil }
                    result += [UInt16(v4 >> 16), UInt16(v4 & 0xFFFF)]
                    continue
                }
                guard (1...4).contains(field.count) else { return nil }
                var group: UInt16 = 0
                for digit in field {
                    guard let nibble = hexValue(digit) else { return nil }
                    group = group << 4 | UInt16(nibble)
                }
                result.append(group)
            }
            return result
        }
        var all: [UInt16]
        if let gap {
            guard let left = groups(text[..<gap], last: false),
                let right = groups(text[(gap + 2)...], last: true),
                left.count + right.count <= 7
            else { return nil }
            all = left + Array(repeating: 0, count: 8 - left.count - right.count) + right
        } else {
            guard let only = groups(text[...], last: true), only.count == 8 else { return nil }
            all = only
        }
        let high = all[0..<4].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        let low = all[4..<8].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        return (high, low)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x41...0x46: digit - 0x41 + 10
        case 0x61...0x66: digit - 0x61 + 10
        default: nil
        }
    }
}
