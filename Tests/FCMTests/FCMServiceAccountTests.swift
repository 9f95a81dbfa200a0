import FCM
import Foundation
import IsletCore
import IsletCrypto
import Testing

@Suite("FCM service accounts: checked as one group, each fault named")
struct FCMServiceAccountTests {
    static let key = try! RSA.SigningKey.generate().pemRepresentation

    static func json(_ changes: [String: JSONValue?] = [:]) -> JSONValue {
        var members: [String: JSONValue] = [
            "type": "service_account", "project_id": "islet-demo", "private_key_id": "abc123",
            "private_key": .string(key), "client_email": "firebase-adminsdk@islet-demo.iam.gserviceaccount.com",
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
        for (name, value) in changes { members[name] = value }
        return .object(members)
    }

    private func faults(_ json: JSONValue, allowHTTP: Bool = false) -> [String: String] {
        do {
            _ = try FCMServiceAccount.parse(json, allowHTTP: allowHTTP)
            return [:]
        } catch {
            return Dictionary(error.faults.map { ($0.field, $0.message) }, uniquingKeysWith: { first, _ in first })
        }
    }

    @Test func aDownloadedAccountParsesAndWritesBackTheSame() throws {
        let account = try FCMServiceAccount.parse(Self.json())
        #expect(account.projectID == "islet-demo")
        #expect(account.clientEmail == "firebase-adminsdk@islet-demo.iam.gserviceaccount.com")
        #expect(account.privateKeyID == "abc123")
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
        #expect(try FCMServiceAccount.parse(account.json) == account)
        // Without a token URI, Google's.
        #expect(try FCMServiceAccount.parse(Self.json(["token_uri": nil])).tokenURI == FCMServiceAccount.googleTokenURI)
    }

    @Test func everyFaultIsNamedAtOnce() throws {
        let all = faults(Self.json(["project_id": nil, "client_email": "not an email", "private_key": "-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----", "token_uri": "ftp://x"]))
        #expect(all["project_id"] == "is required")
        #expect(all["client_email"] == "must be the service account's email address")
        #expect(all["private_key"]?.hasPrefix("must be the account's RSA private key in PEM") == true)
        #expect(all["token_uri"] == "must be an absolute https URL")
        #expect(faults(Self.json(["project_id": "Islet Demo"]))["project_id"]?.contains("Firebase project id") == true)
        #expect(faults(Self.json(["project_id": 7]))["project_id"] == "must be a non-empty string")
        #expect(faults(Self.json(["type": "authorized_user"]))["type"] == "must be service_account")
        #expect(faults(.array([]))["service_account"] != nil)
        // An EC key (an APNs .p8) is not the account's key.
        let ec = try P256.SigningKey.generate().pemRepresentation
        #expect(faults(Self.json(["private_key": .string(ec)]))["private_key"]?.contains("not an RSA key") == true)
        // http only where allowed (a local simulator).
        #expect(faults(Self.json(["token_uri": "http://127.0.0.1:9/token"]))["token_uri"] != nil)
        #expect(faults(Self.json(["token_uri": "http://127.0.0.1:9/token"]), allowHTTP: true).isEmpty)
    }

    @Test func theAssertionCarriesGooglesClaims() throws {
        let account = try FCMServiceAccount.parse(Self.json())
        let key = try RSA.SigningKey(pemRepresentation: account.privateKeyPEM)
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
    }
}
