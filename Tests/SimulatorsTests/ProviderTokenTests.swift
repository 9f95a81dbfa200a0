import Foundation
import IsletCore
import IsletCrypto
import Simulators
import Testing

@Suite("Simulator: provider tokens")
struct ProviderTokenTests {
    let token = SimulatorHarness.token(0xD4)

    @Test func aMissingAuthorizationIsMissingProviderToken() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, headers: ["authorization": nil]), 403, .missingProviderToken)
        expectRefusal(sim.send(to: token, headers: ["authorization": "bearer "]), 403, .missingProviderToken)
    }

    @Test func unreadableTokensAreInvalid() throws {
        let sim = try SimulatorHarness()
        expectRefusal(sim.send(to: token, providerToken: "not.a.jwt"), 403, .invalidProviderToken)
        expectRefusal(sim.send(to: token, providerToken: "abc"), 403, .invalidProviderToken)
        expectRefusal(sim.send(to: token, headers: ["authorization": "basic dXNlcjpwYXNz"]), 403, .invalidProviderToken)
    }

    @Test func aBadSignatureIsInvalid() throws {
        let sim = try SimulatorHarness()
        let impostor = try P256.SigningKey.generate()
        let forged = try SimulatorHarness.jwt(
            key: impostor, keyID: SimulatorHarness.keyID, teamID: SimulatorHarness.teamID, issuedAt: sim.clock.now())
        expectRefusal(sim.send(to: token, providerToken: forged), 403, .invalidProviderToken)
        #expect(sim.lastRecord?.answer.note?.contains("signature") == true)
        // A tampered signature, too.
        var parts = sim.providerToken.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].reversed())
        expectRefusal(sim.send(to: token, providerToken: parts.joined(separator: ".")), 403, .invalidProviderToken)
    }

    @Test func anUnknownKeyOrTeamIsInvalid() throws {
        let sim = try SimulatorHarness()
        let unknownKey = try SimulatorHarness.jwt(key: sim.key, keyID: "OTHERKEY99", teamID: SimulatorHarness.teamID, issuedAt: sim.clock.now())
        expectRefusal(sim.send(to: token, providerToken: unknownKey), 403, .invalidProviderToken)
        let noKey = try SimulatorHarness.jwt(key: sim.key, keyID: nil, teamID: SimulatorHarness.teamID, issuedAt: sim.clock.now())
        expectRefusal(sim.send(to: token, providerToken: noKey), 403, .invalidProviderToken)
        let otherTeam = try SimulatorHarness.jwt(key: sim.key, keyID: SimulatorHarness.keyID, teamID: "OTHERTEAM9", issuedAt: sim.clock.now())
        expectRefusal(sim.send(to: token, providerToken: otherTeam), 403, .invalidProviderToken)
        #expect(sim.lastRecord?.answer.note?.contains("team") == true)
        let noIAT = try SimulatorHarness.jwt(key: sim.key, keyID: SimulatorHarness.keyID, teamID: SimulatorHarness.teamID, issuedAt: nil)
        expectRefusal(sim.send(to: token, providerToken: noIAT), 403, .invalidProviderToken)
        #expect(sim.send(to: token).status == 200)
    }

    @Test func anIATInMillisecondsIsInvalid() throws {
        let sim = try SimulatorHarness()
        let claims: [String: JWTValue] = [
            "iss": .string(SimulatorHarness.teamID), "iat": .integer(sim.now * 1000),
        ]
        let millis = try JSONWebToken.signES256(keyID: SimulatorHarness.keyID, claims: claims, key: sim.key)
        expectRefusal(sim.send(to: token, providerToken: millis), 403, .invalidProviderToken)
        #expect(sim.lastRecord?.answer.note?.contains("milliseconds") == true)
    }

    /// A token whose header and claims are exactly `header` and `claims` (JSON text
    /// as some library writes it), signed by the harness's key; `der` writes the
    /// signature in DER rather than as `r || s`.
    static func token(header: String, claims: String, key: P256.SigningKey, der: Bool = false) throws -> String {
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        var signature = try key.signature(for: Data(input.utf8))
        if der { signature = try ECDSASignature.der(fromRaw: signature) }
        return input + "." + Base64URL.encode(signature)
    }

    @Test func tokensShapedAsOtherLibrariesShapeThemAreAccepted() throws {
        let sim = try SimulatorHarness()
        let (kid, team, now) = (SimulatorHarness.keyID, SimulatorHarness.teamID, sim.now)
        // Pretty-printed, `typ`, `kid` again among the claims, `iat` a string
        // (APNSwift 6.4); compact with `typ` (jsonwebtoken, PyJWT); no `typ`
        // (jwt-go); extra claims; a DER signature (pushy).
        let shapes: [(String, String, String, Bool, Int)] = [
            ("APNSwift", "{\n    \"alg\": \"ES256\",\n    \"typ\": \"JWT\",\n    \"kid\": \"\(kid)\"\n}",
             "{\n    \"iss\": \"\(team)\",\n    \"iat\": \"\(now)\",\n    \"kid\": \"\(kid)\"\n}", false, 1),
            ("node-apn", #"{"alg":"ES256","typ":"JWT","kid":"\#(kid)"}"#, #"{"iat":\#(now),"iss":"\#(team)"}"#, false, 0),
            ("apns2", #"{"alg":"ES256","kid":"\#(kid)"}"#, #"{"iat":\#(now),"iss":"\#(team)"}"#, false, 0),
            ("extra claims", #"{"kid":"\#(kid)","alg":"ES256","x5t":"abc"}"#,
             #"{"iss":"\#(team)","iat":\#(now),"exp":\#(now + 3600),"aud":"apns","jti":"1"}"#, false, 0),
            ("pushy", #"{"alg":"ES256","typ":"JWT","kid":"\#(kid)"}"#, #"{"iss":"\#(team)","iat":\#(now)}"#, true, 1),
            ("fractional iat", #"{"alg":"ES256","kid":"\#(kid)"}"#, #"{"iss":"\#(team)","iat":\#(now).25}"#, false, 1),
        ]
        for (index, (name, header, claims, der, warnings)) in shapes.enumerated() {
            let token = try Self.token(header: header, claims: claims, key: sim.key, der: der)
            let response = sim.send(to: self.token, connection: UInt64(100 + index), providerToken: token)
            #expect(response.status == 200, "\(name): \(sim.lastRecord?.answer.note ?? "")")
            #expect(sim.lastRecord?.warnings.count == warnings, "\(name): \(sim.lastRecord?.warnings ?? [])")
        }
        let warned = sim.engine.pushes().flatMap(\.warnings)
        #expect(warned.contains { $0.contains("iat is the string") })
        #expect(warned.contains { $0.contains("DER") })
        #expect(warned.contains { $0.contains("fraction") })
    }

    @Test func aStringIATIsStillCheckedForAge() throws {
        let sim = try SimulatorHarness()
        let header = #"{"alg":"ES256","typ":"JWT","kid":"\#(SimulatorHarness.keyID)"}"#
        func claims(_ iat: String) -> String { #"{"iss":"\#(SimulatorHarness.teamID)","iat":\#(iat)}"# }
        let old = try Self.token(header: header, claims: claims("\"\(sim.now - 3_601)\""), key: sim.key)
        expectRefusal(sim.send(to: token, connection: 1, providerToken: old), 403, .expiredProviderToken)
        let words = try Self.token(header: header, claims: claims("\"yesterday\""), key: sim.key)
        expectRefusal(sim.send(to: token, connection: 2, providerToken: words), 403, .invalidProviderToken)
        let scientific = try Self.token(header: header, claims: claims("\"1.7e9\""), key: sim.key)
        expectRefusal(sim.send(to: token, connection: 3, providerToken: scientific), 403, .invalidProviderToken)
        let boolean = try Self.token(header: header, claims: claims("true"), key: sim.key)
        expectRefusal(sim.send(to: token, connection: 4, providerToken: boolean), 403, .invalidProviderToken)
        // A DER signature by another key is still a bad signature.
        let impostor = try P256.SigningKey.generate()
        let forged = try Self.token(header: header, claims: claims(String(sim.now)), key: impostor, der: true)
        expectRefusal(sim.send(to: token, connection: 5, providerToken: forged), 403, .invalidProviderToken)
    }

    @Test func aTokenOlderThanAnHourIsExpired() throws {
        let sim = try SimulatorHarness()
        #expect(sim.send(to: token).status == 200)
        sim.clock.advance(by: 59 * 60)
        #expect(sim.send(to: token).status == 200)
        sim.clock.advance(by: 2 * 60)
        expectRefusal(sim.send(to: token), 403, .expiredProviderToken)
        #expect(sim.lastRecord?.answer.note?.contains("3660 s ago") == true)
        // A new token on the same connection is fine: the old one was first used 61 minutes ago.
        #expect(sim.send(to: token, providerToken: try sim.freshToken()).status == 200)
    }

    @Test func changingTokensWithinTwentyMinutesIsTooManyUpdates() throws {
        let sim = try SimulatorHarness()
        #expect(sim.send(to: token, connection: 1).status == 200)
        sim.clock.advance(by: 19 * 60)
        let second = try sim.freshToken()
        expectRefusal(sim.send(to: token, connection: 1, providerToken: second), 429, .tooManyProviderTokenUpdates)
        // The connection keeps its first token.
        #expect(sim.send(to: token, connection: 1).status == 200)
        // Another connection may start with the new token at once.
        #expect(sim.send(to: token, connection: 2, providerToken: second).status == 200)
        sim.clock.advance(by: 60)
        #expect(sim.send(to: token, connection: 1, providerToken: second).status == 200)
        // Going back to the first one is another change, refused for 20 minutes.
        sim.clock.advance(by: 10 * 60)
        expectRefusal(sim.send(to: token, connection: 1), 429, .tooManyProviderTokenUpdates)
    }

    @Test func aKeyRestrictedToTheOtherEnvironmentIsRefused() throws {
        let sim = try SimulatorHarness(environment: .sandbox, keyEnvironments: [.production])
        expectRefusal(sim.send(to: token), 403, .badEnvironmentKeyIdInToken)
        let ok = try SimulatorHarness(environment: .production, keyEnvironments: [.production])
        #expect(ok.send(to: token).status == 200)
    }

    @Test func aConnectionIsAuthenticatedByItsFirstValidToken() throws {
        let sim = try SimulatorHarness()
        let connection = ConnectionID(7)
        #expect(!sim.engine.isAuthenticated(connection))
        _ = sim.send(to: token, connection: 7, providerToken: "garbage")
        #expect(!sim.engine.isAuthenticated(connection))
        // A valid token counts even when the push itself is refused later.
        expectRefusal(sim.send(to: token, topic: nil, connection: 7), 400, .missingTopic)
        #expect(sim.engine.isAuthenticated(connection))
        #expect(!sim.engine.isAuthenticated(ConnectionID(8)))
        sim.engine.connectionClosed(connection)
        #expect(!sim.engine.isAuthenticated(connection))
        // A closed connection's history is gone: a new token is accepted on its id.
        #expect(sim.send(to: token, connection: 7, providerToken: try sim.freshToken()).status == 200)
    }
}
