import IsletCore
import Testing

/// The scope of `text`, which must parse.
private func scope(_ text: String) throws -> NetworkAddressScope {
    try #require(NetworkAddress(text), "\(text) does not parse").scope
}

@Suite("Network addresses: parsing")
struct NetworkAddressParsingTests {
    @Test(arguments: [
        ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"), ("192.168.1.20", "192.168.1.20"),
        ("::", "::"), ("::1", "::1"), ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"), ("2001:db8::1:0:0:1", "2001:db8::1:0:0:1"),
        ("1:0:0:2:0:0:0:3", "1:0:0:2::3"), ("fe80::1:2", "fe80::1:2"), ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"),
        ("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"), ("::ffff:10.1.2.3", "::ffff:10.1.2.3"), ("::FFFF:a01:203", "::ffff:10.1.2.3"),
        ("64:ff9b::127.0.0.1", "64:ff9b::7f00:1"), ("0:0:0:0:0:0:0:0", "::"), ("2001:0db8:0000:0000:0000:ff00:0042:8329", "2001:db8::ff00:42:8329"),
    ])
    func parsesAndPrintsCanonically(text: String, printed: String) throws {
        let address = try #require(NetworkAddress(text), "\(text) does not parse")
        #expect(address.description == printed)
        #expect(NetworkAddress(printed) == address)
    }

    @Test(arguments: [
        "", "1.2.3", "1.2.3.4.5", "256.0.0.1", "01.2.3.4", "1.2.3.04", "1..2.3", "1.2.3.4 ", " 1.2.3.4", "1.2.3.-4", "0x7f.0.0.1",
        "127.1", "2130706433", ":", ":::", "1::2::3", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "12345::", "g::1", ":1::", "1::2:",
        "::1.2.3", "1.2.3.4::", "::1.2.3.4:5", "[::1]", "fe80::1%eth0", "localhost", "::ffff:256.1.1.1", "1:2:3:4:5:6:7:8::",
    ])
    func refusesWhatIsNotANumericAddress(text: String) {
        #expect(NetworkAddress(text) == nil)
    }

    @Test func readsSocketBytes() throws {
        #expect(NetworkAddress(bytes: [127, 0, 0, 1]) == NetworkAddress("127.0.0.1"))
        let v6: [UInt8] = [0xFE, 0x80] + Array(repeating: 0, count: 13) + [1]
        #expect(NetworkAddress(bytes: v6) == NetworkAddress("fe80::1"))
        #expect(NetworkAddress(bytes: [1, 2, 3]) == nil)
        #expect(try #require(NetworkAddress("2001:db8::1")).bytes.count == 16)
        #expect(try #require(NetworkAddress("10.0.0.1")).bytes == [10, 0, 0, 1])
        #expect(NetworkAddress(ipv4: 0x7F00_0001).description == "127.0.0.1")
    }
}

@Suite("Network addresses: scopes at every boundary")
struct NetworkAddressScopeTests {
    @Test(arguments: [
        // 0.0.0.0/8
        ("0.0.0.0", NetworkAddressScope.unspecified), ("0.255.255.255", .unspecified), ("1.0.0.0", .public),
        // 10/8
        ("9.255.255.255", .public), ("10.0.0.0", .privateNetwork), ("10.255.255.255", .privateNetwork), ("11.0.0.0", .public),
        // 100.64/10, and the Alibaba metadata address in it
        ("100.63.255.255", .public), ("100.64.0.0", .privateNetwork), ("100.127.255.255", .privateNetwork),
        ("100.128.0.0", .public), ("100.100.100.200", .metadata), ("100.100.100.199", .privateNetwork),
        // 127/8
        ("126.255.255.255", .public), ("127.0.0.0", .loopback), ("127.0.0.1", .loopback), ("127.255.255.255", .loopback),
        ("128.0.0.0", .public),
        // 169.254/16, and the metadata address in it
        ("169.253.255.255", .public), ("169.254.0.0", .linkLocal), ("169.254.255.255", .linkLocal), ("169.255.0.0", .public),
        ("169.254.169.254", .metadata), ("169.254.169.253", .linkLocal), ("169.254.169.255", .linkLocal),
        // 172.16/12
        ("172.15.255.255", .public), ("172.16.0.0", .privateNetwork), ("172.31.255.255", .privateNetwork), ("172.32.0.0", .public),
        // 192.168/16 and the reserved neighbours
        ("192.167.255.255", .public), ("192.168.0.0", .privateNetwork), ("192.168.255.255", .privateNetwork),
        ("192.169.0.0", .public), ("192.0.0.1", .reserved), ("192.0.2.1", .reserved), ("192.0.3.0", .public),
        ("198.17.255.255", .public), ("198.18.0.0", .reserved), ("198.19.255.255", .reserved), ("198.20.0.0", .public),
        ("198.51.100.7", .reserved), ("203.0.113.9", .reserved), ("203.0.114.0", .public),
        // 224/4, 240/4, broadcast
        ("223.255.255.255", .public), ("224.0.0.0", .multicast), ("239.255.255.255", .multicast), ("240.0.0.0", .reserved),
        ("255.255.255.254", .reserved), ("255.255.255.255", .broadcast),
        ("8.8.8.8", .public), ("1.1.1.1", .public),
    ])
    func ipv4(text: String, expected: NetworkAddressScope) throws {
        #expect(try scope(text) == expected, "\(text)")
    }

    @Test(arguments: [
        ("::", NetworkAddressScope.unspecified), ("::1", .loopback), ("::2", .reserved), ("::127.0.0.1", .reserved),
        // fc00::/7, and the AWS metadata address in it
        ("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .reserved), ("fc00::", .privateNetwork),
        ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .privateNetwork), ("fd00:ec2::254", .metadata), ("fd00:ec2::253", .privateNetwork),
        // fe80::/10, fec0::/10
        ("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .reserved), ("fe80::", .linkLocal),
        ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .linkLocal), ("fec0::", .privateNetwork),
        // ff00::/8
        ("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .privateNetwork), ("ff00::", .multicast), ("ff02::1", .multicast),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .multicast),
        // 2000::/3 and what is carved out of it
        ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .reserved), ("2000::", .public), ("2606:4700::1111", .public),
        ("3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .public), ("4000::", .reserved), ("2001:db8::1", .reserved),
        ("2001:db9::1", .public), ("100::1", .reserved),
        // NAT64 and 6to4 lead where their IPv4 address does
        ("64:ff9b::8.8.8.8", .public), ("64:ff9b::127.0.0.1", .loopback), ("64:ff9b::a9fe:a9fe", .metadata),
        ("64:ff9b:1::1", .privateNetwork), ("2002:0a00:0001::1", .privateNetwork), ("2002:0808:0808::1", .public),
    ])
    func ipv6(text: String, expected: NetworkAddressScope) throws {
        #expect(try scope(text) == expected, "\(text)")
    }

    @Test(arguments: [
        ("::ffff:127.0.0.1", NetworkAddressScope.loopback), ("::ffff:10.0.0.1", .privateNetwork),
        ("::ffff:169.254.169.254", .metadata), ("::ffff:169.254.1.1", .linkLocal), ("::ffff:0.0.0.0", .unspecified),
        ("::ffff:100.64.0.1", .privateNetwork), ("::ffff:224.0.0.1", .multicast), ("::ffff:255.255.255.255", .broadcast),
        ("::ffff:8.8.8.8", .public), ("::ffff:7f00:1", .loopback), ("0:0:0:0:0:ffff:c0a8:101", .privateNetwork),
    ])
    func ipv4MappedAddressesAreTheirIPv4Address(text: String, expected: NetworkAddressScope) throws {
        let address = try #require(NetworkAddress(text))
        #expect(address.scope == expected, "\(text)")
        let mapped = try #require(address.mappedIPv4)
        #expect(mapped.scope == expected)
        #expect(address.description == "::ffff:\(mapped)")
    }
}

@Suite("Network addresses: the webhook rule")
struct NetworkAddressWebhookTests {
    @Test func publicAddressesAreAlwaysAllowed() throws {
        for text in ["8.8.8.8", "2606:4700::1111", "::ffff:1.1.1.1"] {
            let address = try #require(NetworkAddress(text))
            #expect(!address.isRefusedForWebhooks(allowPrivate: false))
            #expect(!address.isRefusedForWebhooks(allowPrivate: true))
            #expect(address.refusalReason(allowPrivate: false) == nil)
        }
    }

    @Test func privateAddressesAreAllowedOnlyWhenPrivateIsAllowed() throws {
        for text in ["127.0.0.1", "::1", "10.1.2.3", "172.20.0.1", "192.168.0.10", "100.64.1.1", "fd12::1", "169.254.3.4", "fe80::1",
            "::ffff:192.168.1.1"]
        {
            let address = try #require(NetworkAddress(text))
            #expect(address.isRefusedForWebhooks(allowPrivate: false), "\(text)")
            #expect(!address.isRefusedForWebhooks(allowPrivate: true), "\(text)")
        }
    }

    @Test func metadataAndNonUnicastAreNeverAllowed() throws {
        for text in ["169.254.169.254", "fd00:ec2::254", "100.100.100.200", "::ffff:169.254.169.254", "0.0.0.0", "::", "224.0.0.251",
            "ff02::fb", "255.255.255.255", "240.0.0.1", "2001:db8::1"]
        {
            let address = try #require(NetworkAddress(text))
            #expect(address.isRefusedForWebhooks(allowPrivate: true), "\(text)")
            #expect(address.isRefusedForWebhooks(allowPrivate: false), "\(text)")
        }
    }

    @Test func reasonsNameTheAddressAndItsScope() throws {
        func reason(_ text: String) throws -> String? {
            try #require(NetworkAddress(text)).refusalReason(allowPrivate: false)
        }
        #expect(try reason("127.0.0.1") == "127.0.0.1 is a loopback address")
        #expect(try reason("::1") == "::1 is a loopback address")
        #expect(try reason("10.0.0.7") == "10.0.0.7 is a private network address")
        #expect(try reason("100.64.0.1") == "100.64.0.1 is a private network address")
        #expect(try reason("fe80::1") == "fe80::1 is a link-local address")
        #expect(try reason("169.254.169.254") == "169.254.169.254 is a cloud metadata service address")
        #expect(try reason("0.0.0.0") == "0.0.0.0 is an unspecified address")
        #expect(try reason("239.1.1.1") == "239.1.1.1 is a multicast address")
        #expect(try reason("255.255.255.255") == "255.255.255.255 is the broadcast address")
        #expect(try reason("240.0.0.1") == "240.0.0.1 is a reserved address")
        #expect(try reason("::ffff:127.0.0.1") == "::ffff:127.0.0.1 is a loopback address")
        #expect(try reason("64:ff9b::7f00:1") == "64:ff9b::7f00:1 is a loopback address (it carries 127.0.0.1)")
        #expect(try #require(NetworkAddress("127.0.0.1")).refusalReason(allowPrivate: true) == nil)
    }
}
