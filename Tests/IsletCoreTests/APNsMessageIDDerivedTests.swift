import IsletCore
import Testing

/// An `apns-id` derived from its send and device: canonical, found again, and
/// never taken for a drawn one or another device's.
@Suite struct APNsMessageIDDerivedTests {
    @Test(arguments: [Int64(0), 1, 42, 0xFFF, 0x1000, 1 << 40, 0x0FFF_FFFF_FFFF_FFFF])
    func aDerivedIDIsCanonicalAndNamesItsSendAndDevice(_ sendID: Int64) {
        for device in ["d1", "", "a-very-long-device-identifier-with-ünïcode-☃", String(repeating: "x", count: 256)] {
            let id = APNsMessageID.derived(sendID: sendID, deviceID: device)
            #expect(APNsMessageID.isCanonical(id))
            #expect(APNsMessageID.derivedSend(id, deviceID: device) == sendID)
            #expect(APNsMessageID.derivedSend(id, deviceID: device + "x") == nil)
            #expect(id == APNsMessageID.derived(sendID: sendID, deviceID: device))
        }
    }

    @Test func idsDifferByDeviceAndSendAndNeverLookDrawn() {
        let ids = (1...50).flatMap { send in (1...50).map { APNsMessageID.derived(sendID: Int64(send), deviceID: "d\($0)") } }
        #expect(Set(ids).count == ids.count)
        for _ in 0..<200 {
            #expect(APNsMessageID.derivedParts(APNsMessageID.mint()) == nil)
        }
        #expect(APNsMessageID.derivedParts("not an id") == nil)
        #expect(APNsMessageID.derivedParts(APNsMessageID.derived(sendID: 7, deviceID: "d").uppercased()) == nil)
    }
}
