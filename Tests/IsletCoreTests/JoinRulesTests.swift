import Foundation
import IsletCore
import Testing

@Suite("Who may follow: join rules and audiences")
struct JoinRulesTests {
    @Test func valuesAreSortedWithoutRepeatsAndCounted() {
        let audience = JoinAudience(userIDs: ["b", "a", "b"], deviceIDs: [], tags: ["t", "t"])
        #expect(audience.userIDs == ["a", "b"] && audience.tags == ["t"] && audience.count == 3)
        #expect(audience == JoinAudience(userIDs: ["a", "b"], tags: ["t"]))
        #expect(!audience.isEmpty && JoinAudience().isEmpty && JoinAudience().count == 0)
    }

    @Test(arguments: [
        JoinAudience(),
        JoinAudience(userIDs: ["u1"]),
        JoinAudience(userIDs: ["u1", "u2"], deviceIDs: ["d\u{0}1", "ü"], tags: [String(repeating: "x", count: 256)]),
    ])
    func anAudienceIsShownAsItsThreeLists(_ audience: JoinAudience) throws {
        let shown = try JSONValue(parsing: Data(audience.json.jsonText.utf8))
        #expect(shown["user_ids"] == .array(audience.userIDs.map(JSONValue.string)))
        #expect(shown["device_ids"] == .array(audience.deviceIDs.map(JSONValue.string)))
        #expect(shown["tags"] == .array(audience.tags.map(JSONValue.string)))
    }

    @Test func aStartsAudienceBecomesItsJoinAudience() {
        #expect(JoinAudience(.userIDs(["u", "u"])) == JoinAudience(userIDs: ["u"]))
        #expect(JoinAudience(.deviceIDs(["d"])) == JoinAudience(deviceIDs: ["d"]))
        #expect(JoinAudience(.tags(["t"])) == JoinAudience(tags: ["t"]))
        #expect(JoinRule(rawValue: "everyone") == nil && LocalJoinRule(rawValue: "user") == .user)
    }
}
