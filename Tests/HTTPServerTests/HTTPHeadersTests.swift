import HTTPServer
import Testing

/// The header fields every transport shares (`HTTPTypes`).
@Suite("Header fields")
struct HTTPHeadersTests {
    @Test func namesAreComparedIgnoringCaseAndRepeatsKeepTheirOrder() {
        var headers: HTTPHeaders = [("Retry-After", "5"), ("x-tag", "a"), ("X-Tag", "b")]
        #expect(headers["retry-after"] == "5" && headers["RETRY-AFTER"] == "5")
        #expect(headers.values(of: "x-TAG") == ["a", "b"])
        #expect(headers["x-tag"] == "a")
        #expect(headers["x-tags"] == nil && headers["x-ta"] == nil)
        headers.set("X-TAG", "c")
        #expect(headers.values(of: "x-tag") == ["c"])
        #expect(headers.map(\.name) == ["Retry-After", "X-TAG"])
        headers.add("retry-after", "6")
        #expect(headers.count == 3 && headers[2].value == "6")
        headers.removeAll()
        #expect(headers.isEmpty)
    }

    @Test func aTransportsFieldsAreWrappedAsTheyAre() {
        let pairs: [(name: String, value: String)] = [("apns-id", "1"), (":status", "200"), ("apns-id", "2")]
        let headers = HTTPHeaders(pairs)
        #expect(headers.map(\.name) == pairs.map(\.name) && headers.map(\.value) == pairs.map(\.value))
        #expect(HTTPHeaders.sameName("Content-Type", "content-type") && !HTTPHeaders.sameName("Content-Type", "content-typ"))
        #expect(HTTPStatus.reasonPhrase(422) == "Unprocessable Content" && HTTPResponse.reasonPhrase(599) == "HTTP 599")
    }

    /// A field value's optional whitespace is spaces and tabs, on either side, and
    /// nothing else: not what lies between, nor any other kind of space.
    @Test func optionalWhitespaceIsSpacesAndTabsAroundAValue() {
        #expect(" \t key-123 \t ".trimmingOptionalWhitespace() == "key-123")
        #expect("key".trimmingOptionalWhitespace() == "key")
        #expect("a b\tc".trimmingOptionalWhitespace() == "a b\tc")
        #expect("".trimmingOptionalWhitespace().isEmpty && " \t  ".trimmingOptionalWhitespace().isEmpty)
        #expect("\u{00A0}key\r".trimmingOptionalWhitespace() == "\u{00A0}key\r")
        #expect(" é ".trimmingOptionalWhitespace() == "é")
        let line: Substring = "Bearer   token  ".dropFirst(6)
        #expect(line.trimmingOptionalWhitespace() == "token")
    }
}
