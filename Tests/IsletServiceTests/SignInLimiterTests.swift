import Foundation
import IsletCore
@testable import IsletService
import Testing

/// The sign-in limit on a manual clock: attempts per address in a sliding minute.
@Suite("Sign-in limiter")
struct SignInLimiterTests {
    @Test func anAddressHasItsAttemptsInAnyMinute() throws {
        let clock = ManualWallClock()
        let limiter = SignInLimiter(attemptsPerMinute: 3, clock: clock)
        for _ in 0..<3 {
            try limiter.attempt("192.0.2.1")
            clock.advance(by: 10)
        }
        // The fourth within the minute of the first is refused, with the wait until
        // the first leaves the window (60 - 30 s).
        do {
            try limiter.attempt("192.0.2.1")
            Issue.record("a fourth attempt passed")
        } catch {
            #expect(error.code == .limited)
            #expect(error.retryAfter == 30)
        }
        #expect(throws: ServiceError.self) { try limiter.check("192.0.2.1") }
        // Another address is not affected.
        try limiter.attempt("192.0.2.2")
        // The window slides: once the first attempt is a minute old, one more passes.
        clock.advance(by: 30)
        try limiter.check("192.0.2.1")
        try limiter.attempt("192.0.2.1")
        #expect(throws: ServiceError.self) { try limiter.attempt("192.0.2.1") }
    }

    @Test func failuresCountAndARefusedAttemptIsNotCounted() throws {
        let clock = ManualWallClock()
        let limiter = SignInLimiter(attemptsPerMinute: 2, clock: clock)
        limiter.failed("198.51.100.1")
        limiter.failed("198.51.100.1")
        #expect(throws: ServiceError.self) { try limiter.check("198.51.100.1") }
        // A failure past the limit is kept, newest first: the address stays over
        // the limit until all but one of the newest have left the minute.
        clock.advance(by: 50)
        limiter.failed("198.51.100.1")
        #expect(throws: ServiceError.self) { try limiter.check("198.51.100.1") }
        clock.advance(by: 11)
        try limiter.check("198.51.100.1")
        // Refused attempts do not push the wait further.
        let other = SignInLimiter(attemptsPerMinute: 1, clock: clock)
        try other.attempt("x")
        for _ in 0..<5 { #expect(throws: ServiceError.self) { try other.attempt("x") } }
        clock.advance(by: 60)
        try other.attempt("x")
    }

    @Test func anIPv6AddressCountsAsItsSlash64() throws {
        let limiter = SignInLimiter(attemptsPerMinute: 2, clock: ManualWallClock())
        try limiter.attempt("2001:db8:1:2::1")
        try limiter.attempt("2001:db8:1:2:ffff::9")
        #expect(throws: ServiceError.self) { try limiter.attempt("[2001:db8:1:2::77]") }
        try limiter.attempt("2001:db8:1:3::1")
        #expect(SignInLimiter.key("192.0.2.1") == "192.0.2.1")
    }

    @Test func zeroTurnsTheLimitOffAndAddressesAreBounded() throws {
        let clock = ManualWallClock()
        let off = SignInLimiter(attemptsPerMinute: 0, clock: clock)
        for _ in 0..<100 { try off.attempt("203.0.113.1") }
        #expect(off.addressCount == 0)
        let bounded = SignInLimiter(attemptsPerMinute: 5, clock: clock, maxAddresses: 50)
        for index in 0..<500 { try bounded.attempt("10.0.\(index / 256).\(index % 256)") }
        #expect(bounded.addressCount <= 51)
    }
}
