import HTTP2
import Testing

@Suite("HTTP/2 library")
struct HTTP2LibraryTests {
    @Test func linkedNGHTTP2ReportsItsVersion() {
        let parts = HTTP2Library.version.split(separator: ".")
        #expect(parts.count == 3)
        #expect(parts.allSatisfy { Int($0) != nil })
        #expect(Int(parts[0]) ?? 0 >= 1)
    }
}
