import Foundation
import IsletCore
import IsletTesting
import Testing

/// Android devices through the device routes: an FCM registration token and no
/// environment, kept as APNs tokens are, never crossed with an iOS device's.
@Suite("Android devices: registered with an FCM token")
struct AndroidDeviceTests {
    static let fcmToken = "dQw4w9WgXcQ:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"

    @Test func anAndroidDeviceRegistersItsFCMTokenWhichIsKeptUntilReplaced() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let path = "/v1/apps/\(app.id)/devices/pixel-1"
            let created = try await h.call(
                "PUT", path, key: app.deviceKey, json: ["platform": "android", "fcm_token": .string(Self.fcmToken), "user_id": "u1"])
            #expect(created.status == 201, "\(created.json)")
            #expect(created["platform"] == "android")
            #expect(created["environment"] == .null)
            #expect(created["has_fcm_token"] == true)
            #expect(created["has_apns_token"] == false)
            let secret = try #require(created["device_secret"]?.stringValue)
            let headers = ["Islet-Device-Secret": secret]
            // Without a token (or with null), the stored one stays.
            for body: JSONValue in [["platform": "android"], ["platform": "android", "fcm_token": .null]] {
                let again = try await h.call("PUT", path, key: app.deviceKey, json: body, headers: headers)
                #expect(again.status == 200, "\(again.json)")
                #expect(again["has_fcm_token"] == true)
            }
            let stored = try h.application.services.store.readNow { try $0.device(appID: app.id, deviceID: "pixel-1") }
            #expect(stored?.fcmToken == Self.fcmToken)
            let rotated = try await h.call(
                "PUT", path, key: app.deviceKey, json: ["platform": "android", "fcm_token": "eXyZ:APA91bNewToken-0123456789"],
                headers: headers)
            #expect(rotated.status == 200)
            #expect(try h.application.services.store.readNow { try $0.device(appID: app.id, deviceID: "pixel-1") }?.fcmToken
                == "eXyZ:APA91bNewToken-0123456789")

            // An Android device has no APNs tokens, and reports nothing of ActivityKit's.
            let startToken = try await h.call(
                "PUT", path + "/push-to-start/DeliveryAttributes", key: app.deviceKey,
                json: ["token": .string(String(repeating: "ab", count: 32))], headers: headers)
            #expect(startToken.status == 409, "\(startToken.json)")
            let updateToken = try await h.call(
                "PUT", path + "/activities/order-1", key: app.deviceKey,
                json: ["activity_type": "DeliveryAttributes", "token": .string(String(repeating: "cd", count: 32))], headers: headers)
            #expect(updateToken.status == 409, "\(updateToken.json)")
            let frequent = try await h.call(
                "PUT", path, key: app.deviceKey, json: ["platform": "android", "frequent_updates": true], headers: headers)
            #expect(frequent.status == 422 && frequent.errorFields == ["frequent_updates"])

            // A device is one platform for good.
            let switched = try await h.call(
                "PUT", path, key: app.deviceKey, json: ["platform": "ios", "environment": "sandbox"], headers: headers)
            #expect(switched.status == 409, "\(switched.json)")
            #expect(switched.errorFields == ["platform"])
        }
    }

    @Test func fieldsOfTheOtherPlatformAreRefusedNamingThem() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            func put(_ body: JSONValue) async throws -> Reply {
                try await h.call("PUT", "/v1/apps/\(app.id)/devices/d", key: app.deviceKey, json: body)
            }
            let androidEnvironment = try await put(["platform": "android", "environment": "sandbox"])
            #expect(androidEnvironment.status == 422 && androidEnvironment.errorFields == ["environment"], "\(androidEnvironment.json)")
            let androidAPNs = try await put(["platform": "android", "apns_token": .string(String(repeating: "ab", count: 32))])
            #expect(androidAPNs.status == 422 && androidAPNs.errorFields == ["apns_token"])
            let iosFCM = try await put(["platform": "ios", "environment": "sandbox", "fcm_token": .string(Self.fcmToken)])
            #expect(iosFCM.status == 422 && iosFCM.errorFields == ["fcm_token"])
            let iosNoEnvironment = try await put(["platform": "ios"])
            #expect(iosNoEnvironment.status == 422 && iosNoEnvironment.errorFields == ["environment"])
            // An APNs token given as an FCM token is refused: the kinds never cross.
            let hex = try await put(["platform": "android", "fcm_token": .string(String(repeating: "ab", count: 32))])
            #expect(hex.status == 422 && hex.errorFields == ["fcm_token"])
            // It says why: the token has only characters an FCM token may hold.
            let hexDetail = hex["detail"]?.stringValue ?? ""
            #expect(hexDetail.contains("all hexadecimal") && hexDetail.contains("APNs device token"), "\(hex.json)")
            #expect(hexDetail.contains("apns_token") && hexDetail.contains("platform ios"), "\(hex.json)")
            #expect(!hexDetail.contains("letters, digits"), "\(hex.json)")
            let short = try await put(["platform": "android", "fcm_token": "abc:def"])
            #expect(short.status == 422 && short.errorFields == ["fcm_token"])
            #expect(short["detail"]?.stringValue?.contains("20 to 4096 letters, digits, -, _ and :") == true, "\(short.json)")
            #expect(short["detail"]?.stringValue?.contains("hexadecimal") == false)
            let other = try await put(["platform": "windows", "environment": "sandbox"])
            #expect(other.status == 422 && other.errorFields == ["platform"])
            #expect(try h.application.services.store.readNow { try $0.device(appID: app.id, deviceID: "d") } == nil)
        }
    }
}
