import SQLStorage
import Storage
import Testing

/// What a notice says on PostgreSQL's `NOTIFY`, read back as it was sent.
@Suite struct StoreNoticePayloadTests {
    @Test(arguments: [
        StoreNotice.pushesQueued, .timersChanged, .resync, .appChanged(appID: "app_1"), .eventsWanted(appID: "app_1"),
        .eventsWanted(appID: "app:with:colons"), .appChanged(appID: ""),
    ])
    func aNoticeReadsBackAsItWasSent(_ notice: StoreNotice) {
        #expect(StoreNotice(payload: notice.payload) == notice)
    }

    @Test func aPayloadThisVersionDoesNotKnowIsNone() {
        #expect(StoreNotice(payload: "") == nil)
        #expect(StoreNotice(payload: "stream:app_1") == nil)
        #expect(StoreNotice(payload: "events") == nil)
    }
}
