import Foundation
import IsletCrypto
import Storage

/// Device secrets: the proof that a request for a device comes from that device,
/// since the device key ships inside the app and is public. A secret is random,
/// prefixed so that a misplaced one is recognised, shown once (by the registration
/// that creates the device, a rotation or a reset) and stored only as its SHA-256
/// hash, compared in constant time.
///
/// Under an app's `device_secrets: required`, every request for a registered device
/// carries its secret in the `Islet-Device-Secret` header, and a device without one
/// (registered before secrets existed) gets one only from a reset with the server
/// key. Under `off`, the header is not checked, but secrets are still issued so that
/// an app can start storing them before it moves to `required`.
public enum DeviceSecrets {
    /// The header a device route reads the secret from.
    public static let header = "Islet-Device-Secret"
    /// What every secret starts with.
    static let prefix = "islet_ds_"

    /// A new secret.
    static func generate() throws -> String {
        prefix + Base64URL.encode(try SecureRandom.bytes(32))
    }

    /// What the store keeps of a secret.
    static func hash(_ secret: String) -> Data { Digest.sha256(Data(secret.utf8)) }

    /// Checks a request for a registered device under its app's setting: answers
    /// whether it carried the device's current secret. Under `required` a request
    /// that did not is `forbidden`, naming the header; under `off` nothing is
    /// refused.
    @discardableResult
    static func check(_ access: DeviceAccess, presented: String?, appID: String, deviceID: String) throws(ServiceError) -> Bool {
        switch access.policy {
        case .off:
            guard let stored = access.secretHash, let presented, !presented.isEmpty else { return false }
            return Digest.constantTimeEquals(hash(presented), stored)
        case .required:
            try requireCurrent(access.secretHash, presented: presented, appID: appID, deviceID: deviceID)
            return true
        }
    }

    /// Passes only the device's current secret, whatever the app's setting (a
    /// rotation needs the old secret): else `forbidden`, naming the header.
    static func requireCurrent(_ stored: Data?, presented: String?, appID: String, deviceID: String) throws(ServiceError) {
        guard let stored else {
            throw ServiceError(
                .forbidden,
                "Device \(deviceID) has no secret: it registered before its app required one. The app's backend gives it one with POST /v1/apps/\(appID)/devices/\(deviceID)/secret/reset (server key).",
                fields: [.init(field: header, message: "cannot be checked: the device has no secret; reset it with the server key")])
        }
        guard let presented, !presented.isEmpty else {
            throw ServiceError(
                .forbidden,
                "Every request for device \(deviceID) must carry the \(header) header: the device_secret its registration answered.",
                fields: [.init(field: header, message: "is required")])
        }
        guard Digest.constantTimeEquals(hash(presented), stored) else {
            throw ServiceError(
                .forbidden, "The \(header) header is not device \(deviceID)'s secret (a rotated or reset secret stops working).",
                fields: [.init(field: header, message: "is not the device's secret")])
        }
    }
}
