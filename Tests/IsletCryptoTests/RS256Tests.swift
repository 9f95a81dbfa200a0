import Foundation
import IsletCrypto
import IsletTesting
import Testing

@Suite("RS256 signing")
struct RS256Tests {
    let message = Data("header.claims".utf8)

    @Test func generatedKeyRoundTripsAndSignsWhatItsPublicHalfVerifies() throws {
        let key = try RSA.SigningKey.generate()
        let pem = key.pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try RSA.SigningKey(pemRepresentation: pem)
        #expect(reloaded.publicKey.pemRepresentation == key.publicKey.pemRepresentation)
        let signature = try reloaded.signature(for: message)
        #expect(signature.count == 256)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        // PKCS#1 v1.5 is deterministic: the same key signs the same bytes alike.
        #expect(try key.signature(for: message) == signature)
        let verifying = try RSA.VerifyingKey(pemRepresentation: key.publicKey.pemRepresentation)
        #expect(verifying.isValidSignature(signature, for: message))
    }

    @Test func tamperedMessageOrSignatureOrAnotherKeyFails() throws {
        let key = try RSA.SigningKey.generate()
        var signature = try key.signature(for: message)
        #expect(!key.publicKey.isValidSignature(signature, for: Data("header.claimz".utf8)))
        #expect(!(try RSA.SigningKey.generate()).publicKey.isValidSignature(signature, for: message))
        signature[10] ^= 0x01
        #expect(!key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(Data(), for: message))
    }

    @Test func aJWTSignedWithRS256VerifiesOnlyAsRS256() throws {
        let key = try RSA.SigningKey.generate()
        let compact = try JSONWebToken.signRS256(
            keyID: "kid-1", claims: ["iss": .string("svc@example.iam.gserviceaccount.com"), "iat": .integer(1_800_000_000)],
            key: key)
        let token = try JSONWebToken(parsing: compact)
        #expect(token.header["alg"] == .string("RS256"))
        #expect(token.header["kid"] == .string("kid-1"))
        #expect(token.claims["iat"] == .integer(1_800_000_000))
        #expect(token.isValidRS256(using: key.publicKey))
        #expect(!token.isValidRS256(using: try RSA.SigningKey.generate().publicKey))
        // An ES256 token is not taken as RS256, whatever its signature.
        let es = try JSONWebToken(
            parsing: try JSONWebToken.signES256(keyID: nil, claims: [:], key: try P256.SigningKey.generate()))
        #expect(!es.isValidRS256(using: key.publicKey))
    }

    @Test(.requires(.processes)) func opensslVerifiesOurSignaturesAndWeRefuseWhatIsNotAnRSAKey() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"))
        try await withTemporaryDirectory { dir in
            // A key openssl made (PKCS#8), read and used by us, checked by openssl.
            let made = try await runCommand("/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
            let key = try RSA.SigningKey(pemRepresentation: made.output)
            let publicFile = dir.appendingPathComponent("public.pem")
            let signatureFile = dir.appendingPathComponent("signature.bin")
            let messageFile = dir.appendingPathComponent("message.txt")
            try key.publicKey.pemRepresentation.write(to: publicFile, atomically: true, encoding: .utf8)
            try key.signature(for: message).write(to: signatureFile)
            try message.write(to: messageFile)
            let verified = try await runCommand(
                "/usr/bin/openssl",
                ["dgst", "-sha256", "-verify", publicFile.path, "-signature", signatureFile.path, messageFile.path])
            #expect(verified.status == 0, "\(verified.error)")
            #expect(verified.output.contains("Verified OK"))

            let small = try await runCommand("/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"])
            let tooSmall = #expect(throws: CryptoError.self) { try RSA.SigningKey(pemRepresentation: small.output) }
            #expect(tooSmall?.code == .unsupportedKey)
            #expect(tooSmall?.description.contains("1024 bits") == true)
            let ec = try P256.SigningKey.generate().pemRepresentation
            let notRSA = #expect(throws: CryptoError.self) { try RSA.SigningKey(pemRepresentation: ec) }
            #expect(notRSA?.description.contains("not an RSA key") == true)
            #expect(throws: CryptoError.self) { try RSA.SigningKey(pemRepresentation: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
        }
    }
}
