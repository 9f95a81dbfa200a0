import FCM
import Foundation
import IsletCore
import IsletCrypto
import Testing

@Suite("FCM assertions: Google's claims, signed with RS256")
struct FCMAssertionTests {
    @Test func theAssertionCarriesGooglesClaims() throws {
        let key = try RSA.SigningKey.generate()
        let account = FCMServiceAccount(
            projectID: "islet-demo", clientEmail: "firebase-adminsdk@islet-demo.iam.gserviceaccount.com",
            privateKeyPEM: key.pemRepresentation, privateKeyID: "abc123", tokenURI: FCMServiceAccount.googleTokenURI)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let jwt = try JSONWebToken(parsing: try FCMAccessTokens.assertion(account: account, key: key, now: now))
        #expect(jwt.header["alg"] == .string("RS256"))
        #expect(jwt.header["kid"] == .string("abc123"))
        #expect(jwt.claims["iss"] == .string(account.clientEmail))
        #expect(jwt.claims["scope"] == .string("https://www.googleapis.com/auth/firebase.messaging"))
        #expect(jwt.claims["aud"] == .string("https://oauth2.googleapis.com/token"))
        #expect(jwt.claims["iat"] == .integer(1_800_000_000))
        #expect(jwt.claims["exp"] == .integer(1_800_003_600))
        #expect(jwt.isValidRS256(using: key.publicKey))
        // The JSON a team would download for it names the same account.
        #expect(account.json["client_email"] == .string(account.clientEmail))
        #expect(account.json["type"] == "service_account")
    }
}
