import Foundation
import IsletCore
import IsletServer
import IsletService

/// The newcomer's walk-through `islet serve --simulator` prints: one activity's whole
/// life, as curl commands against this very server and its simulator.
enum Walkthrough {
    static func text(application: Application, demo: DemoApp) -> String {
        let host = application.configuration.host.contains(":") ? "[\(application.configuration.host)]" : application.configuration.host
        let api = "http://\(host):\(application.port)"
        let inspect = application.embeddedSimulators?.endpoint.inspectURL ?? "(no inspection port)"
        let fcmInspect = application.embeddedSimulators?.endpoint.fcmInspectURL ?? "(no FCM simulator)"
        var random = SystemRandomNumberGenerator()
        let startToken = PushToken.make(byteCount: 32, using: &random)
        // A demo app kept from an earlier start may hold phone-1 already, with a
        // secret that start printed: this one registers a phone of its own.
        let suffix = demo.created ? "1" : String(format: "%04x", UInt16.random(in: .min ... .max, using: &random))
        let device = "phone-\(suffix)"
        let android = "pixel-\(suffix)"
        let fcmToken = "demo\(suffix):APA91b" + PushToken.make(byteCount: 24, using: &random)
        // A service account the embedded FCM trusts, for an app of one's own.
        let account = (try? application.embeddedSimulators?.simulators.makeFCMAccount()).flatMap { $0 }.map { credentials in
            JSONValue.object([
                "type": "service_account", "project_id": .string(credentials.projectID),
                "private_key_id": credentials.privateKeyID.map(JSONValue.string) ?? .null, "private_key": .string(credentials.privateKeyPEM),
                "client_email": .string(credentials.clientEmail), "token_uri": .string(credentials.tokenURI),
            ]).jsonText
        }
        let user = "user-\(suffix)"
        let json = "-H 'Content-Type: application/json'"
        let secret = "-H \"\(DeviceSecrets.header): $DEVICE_SECRET\""
        return """

            Islet is running with the APNs simulator in-process (pushes go nowhere near Apple).
            \(demo.created ? "A demo app was created" : "The demo app was given fresh keys"): \(demo.appID) (bundle id \(demo.bundleID)).

            Paste into another shell:

              export ISLET=\(api) SIM=\(inspect) FCM=\(fcmInspect) APP=\(demo.appID)
              export SERVER_KEY=\(demo.serverKey)
              export DEVICE_KEY=\(demo.deviceKey)

            1. The app registers its device, keeps the device_secret the answer carries (shown once; every later request for the device sends it), and registers a push-to-start token for its activity type:
              DEVICE_SECRET=$(curl -sX PUT $ISLET/v1/apps/$APP/devices/\(device) -H "Authorization: Bearer $DEVICE_KEY" \(json) -d '{"platform":"ios","environment":"sandbox","user_id":"\(user)"}' | sed -n 's/.*"device_secret":"\\([^"]*\\)".*/\\1/p'); echo "$DEVICE_SECRET"
              curl -sX PUT $ISLET/v1/apps/$APP/devices/\(device)/push-to-start/DeliveryAttributes -H "Authorization: Bearer $DEVICE_KEY" \(secret) \(json) -d '{"token":"\(startToken)"}'

               The user's Android phone registers its FCM token (an Android device needs no push-to-start token):
              ANDROID_SECRET=$(curl -sX PUT $ISLET/v1/apps/$APP/devices/\(android) -H "Authorization: Bearer $DEVICE_KEY" \(json) -d '{"platform":"android","fcm_token":"\(fcmToken)","user_id":"\(user)"}' | sed -n 's/.*"device_secret":"\\([^"]*\\)".*/\\1/p'); echo "$ANDROID_SECRET"

            2. Your backend registers the activity type with receipts on (each send names itself in the content state, under "islet", and the phone says what it showed), then starts an activity on the user's devices (the iPhone through APNs, the Android phone through FCM):
              curl -sX PUT $ISLET/v1/apps/$APP/activity-types/DeliveryAttributes -H "Authorization: Bearer $SERVER_KEY" \(json) -d '{"attributes":{"order":{"type":"string"}},"content_state":{"status":{"type":"string"},"eta_minutes":{"type":"int"}},"receipts":true}'
              curl -sX POST $ISLET/v1/apps/$APP/activities -H "Authorization: Bearer $SERVER_KEY" \(json) -d '{"activity_id":"order-42","activity_type":"DeliveryAttributes","attributes":{"order":"42"},"content_state":{"status":"preparing","eta_minutes":25},"alert":{"title":"Order 42","body":"We are preparing your order"},"audience":{"user_ids":["\(user)"]}}'

            3. The simulated phone shows it and mints an update token; the app registers it:
              curl -s $SIM/activities
              TOKEN=$(curl -s $SIM/activities | tr ',' '\\n' | sed -n 's/.*"update_token":"\\([0-9a-f]*\\)".*/\\1/p' | tail -1)
              curl -sX PUT $ISLET/v1/apps/$APP/devices/\(device)/activities/order-42 -H "Authorization: Bearer $DEVICE_KEY" \(secret) \(json) -d "{\\"activity_type\\":\\"DeliveryAttributes\\",\\"token\\":\\"$TOKEN\\"}"

            4. Your backend updates it:
              curl -sX POST $ISLET/v1/apps/$APP/activities/order-42/update -H "Authorization: Bearer $SERVER_KEY" \(json) -d '{"content_state":{"status":"on the way","eta_minutes":10}}'

            5. The phone shows the update, and the app says so with the send id its content state carries (a receipt); then your backend ends the activity:
              SEND_ID=$(curl -s $SIM/activities | tr ',' '\\n' | sed -n 's/.*"send_id":"\\([0-9]*\\)".*/\\1/p' | tail -1)
              curl -sX POST $ISLET/v1/apps/$APP/devices/\(device)/activities/order-42/receipts -H "Authorization: Bearer $DEVICE_KEY" \(secret) \(json) -d "{\\"send_id\\":\\"$SEND_ID\\"}"
              curl -sX POST $ISLET/v1/apps/$APP/activities/order-42/end -H "Authorization: Bearer $SERVER_KEY" \(json) -d '{"content_state":{"status":"delivered","eta_minutes":0}}'

            6. See what happened, on the server and on the simulated phones:
              curl -s $ISLET/v1/apps/$APP/activities/order-42 -H "Authorization: Bearer $SERVER_KEY"
              curl -s $ISLET/v1/apps/$APP/activities/order-42/pushes -H "Authorization: Bearer $SERVER_KEY"
              curl -s $SIM/activities
              curl -s $FCM/devices

            The API is described at $ISLET/openapi.json; metrics at $ISLET/metrics.
            \(account.map { "\nThe demo app sends to the FCM simulator at \(application.embeddedSimulators?.endpoint.fcmURL?.absoluteString ?? "?"). A service account it trusts, for an app of your own (POST /v1/apps with {\"fcm\":{\"service_account\": …}}; it holds while this server runs):\n  \($0)\n" } ?? "")

            """
    }
}
