import Foundation
import IsletCore
import Testing

@Suite("Who may follow: join rules and audiences")
struct JoinRulesTests {
    @Test func anAudienceTakesInADeviceByItsIDItsUserOrOneOfItsTags() {
        let audience = JoinAudience(userIDs: ["u1"], deviceIDs: ["d1"], tags: ["vip", "couriers"])
        #expect(audience.contains(deviceID: "d1", userID: nil, tags: []))
        #expect(audience.contains(deviceID: "d9", userID: "u1", tags: []))
        #expect(audience.contains(deviceID: "d9", userID: nil, tags: ["fans", "couriers"]))
        #expect(!audience.contains(deviceID: "d9", userID: "u2", tags: ["fans"]))
        // Ids are compared exactly: no case folding, no prefixes.
        #expect(!audience.contains(deviceID: "D1", userID: "U1", tags: ["VIP", "vi", ""]))
        #expect(!JoinAudience().contains(deviceID: "", userID: "", tags: [""]))
    }

    @Test func valuesAreSortedWithoutRepeatsAndAddingKeepsEveryValueOnce() {
        let audience = JoinAudience(userIDs: ["b", "a", "b"], deviceIDs: [], tags: ["t"])
        #expect(audience.userIDs == ["a", "b"] && audience.count == 3)
        let widened = audience.adding(JoinAudience(userIDs: ["a", "c"], deviceIDs: ["d"], tags: ["t"]))
        #expect(widened == JoinAudience(userIDs: ["a", "b", "c"], deviceIDs: ["d"], tags: ["t"]))
        #expect(widened.count == 5 && !widened.isEmpty && JoinAudience().isEmpty)
    }

    @Test(arguments: [
        JoinAudience(),
        JoinAudience(userIDs: ["u1"]),
        JoinAudience(userIDs: ["u1", "u2"], deviceIDs: ["d\u{0}1", "ü"], tags: [String(repeating: "x", count: 256)]),
    ])
    func anAudienceReadsBackAsStored(_ audience: JoinAudience) throws {
        #expect(JoinAudience(json: audience.json) == audience)
        #expect(JoinAudience(json: try JSONValue(parsing: audience.json.jsonText.data(using: .utf8)!)) == audience)
    }

    @Test func aStartsAudienceBecomesItsJoinAudienceAndNonListsReadAsEmpty() {
        #expect(JoinAudience(.userIDs(["u"])) == JoinAudience(userIDs: ["u"]))
        #expect(JoinAudience(.deviceIDs(["d"])) == JoinAudience(deviceIDs: ["d"]))
        #expect(JoinAudience(.tags(["t"])) == JoinAudience(tags: ["t"]))
        #expect(JoinAudience(json: ["user_ids": "u", "tags": [1, "t"]]) == JoinAudience(tags: ["t"]))
        #expect(JoinAudience(json: .null).isEmpty)
        #expect(JoinRule(rawValue: "everyone") == nil && LocalJoinRule(rawValue: "user") == .user)
    }
}
