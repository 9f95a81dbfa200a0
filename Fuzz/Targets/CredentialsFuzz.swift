import Foundation
import HTTP2
import IsletCore
import IsletCrypto
import Simulators

/// Key and token parsing: PEM private keys (an APNs `.p8`) and public keys, DER and
/// raw ECDSA signatures, base64url, compact JWTs, and provider tokens as the
/// simulator verifies them. The first byte picks what the rest is fed to.
public enum CredentialsFuzz {
    private struct Setup: Sendable {
        let engine: SimulatorEngine
        let key: P256.SigningKey
    }

    private static let setup: Setup = {
        let key = try! P256.SigningKey.generate()
        let configuration = SimulatorConfiguration(
            trustedKeys: [TrustedKey(keyID: "KEY1234567", teamID: "TEAM123456", publicKey: key.publicKey)],
            pushHistoryLimit: 16)
        let engine = SimulatorEngine(configuration: configuration, clock: ManualWallClock(), random: SeededRandomSource(seed: 1))
        return Setup(engine: engine, key: key)
    }()

    public static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let mode = bytes.first else { return }
        let rest = Data(bytes.dropFirst())
        let text = String(decoding: rest, as: UTF8.self)
        switch mode % 6 {
        case 0:
            // A `.p8` as an app's credentials carry it: a key read must sign, and its
            // public half must verify what it signed.
            guard let key = try? P256.SigningKey(pemRepresentation: text) else { return }
            let message = Data("fuzz".utf8)
            guard let signature = try? key.signature(for: message) else { fatalError("a P-256 key read from PEM cannot sign") }
            guard key.publicKey.isValidSignature(signature, for: message) else { fatalError("a signature does not verify") }
            guard (try? P256.SigningKey(pemRepresentation: key.pemRepresentation)) != nil else {
                fatalError("a key's own PEM does not read back")
            }
        case 1:
            guard let key = try? P256.VerifyingKey(pemRepresentation: text) else { return }
            _ = key.isValidSignature(Data(repeating: 1, count: 64), for: rest)
            guard (try? P256.VerifyingKey(pemRepresentation: key.pemRepresentation)) != nil else {
                fatalError("a public key's own PEM does not read back")
            }
        case 2:
            // DER to raw and back: raw → DER → raw gives the same 64 bytes.
            if let raw = try? ECDSASignature.raw(fromDER: rest) {
                guard let der = try? ECDSASignature.der(fromRaw: raw), let again = try? ECDSASignature.raw(fromDER: der),
                    again == raw
                else { fatalError("a raw signature does not survive DER") }
            }
            if let der = try? ECDSASignature.der(fromRaw: rest) {
                guard let raw = try? ECDSASignature.raw(fromDER: der), raw == rest else {
                    fatalError("a DER signature made from raw bytes does not read back")
                }
            }
            _ = setup.key.publicKey.isValidSignature(rest, for: Data("message".utf8))
        case 3:
            if let decoded = Base64URL.decode(text) {
                guard Base64URL.decode(Base64URL.encode(decoded)) == decoded else { fatalError("base64url round trip") }
            }
            if let token = try? JSONWebToken(parsing: text) {
                _ = token.isValidES256(using: setup.key.publicKey)
            }
        case 4:
            // A header and claims of the input's choosing, correctly signed: what the
            // verifier reads past the signature.
            let parts = rest.split(separator: 0x0A, maxSplits: 1, omittingEmptySubsequences: false)
            let header = parts.first.map { Data($0) } ?? Data()
            let claims = parts.count > 1 ? Data(parts[1]) : Data()
            let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
            guard let signature = try? setup.key.signature(for: Data(input.utf8)) else { return }
            push(authorization: "bearer " + input + "." + Base64URL.encode(signature))
        default:
            push(authorization: text)
        }
    }

    /// A push carrying `authorization`, through the simulator's checks.
    private static func push(authorization: String) {
        let request = SimulatorRequest(
            path: "/3/device/" + String(repeating: "ab", count: 32),
            headers: [
                ("authorization", authorization), ("apns-topic", "com.example.app"), ("apns-push-type", "alert"),
            ],
            body: Data(#"{"aps":{"alert":"hi"}}"#.utf8))
        let response = setup.engine.handle(request, connection: ConnectionID(1))
        guard (200...599).contains(response.status) else { fatalError("status \(response.status)") }
    }
}
