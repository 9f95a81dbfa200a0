import Foundation
import IsletCrypto
import IsletTesting
import Testing

@Suite("ES256 signing")
struct ES256Tests {
    let message = Data("header.claims".utf8)

    @Test func generatedKeyRoundTripsThroughPKCS8PEM() throws {
        let key = try P256.SigningKey.generate()
        let pem = key.pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try P256.SigningKey(pemRepresentation: pem)
        #expect(reloaded.publicKey.pemRepresentation == key.publicKey.pemRepresentation)
        #expect(reloaded.pemRepresentation == pem)
    }

    @Test func signatureIsRawAndVerifies() throws {
        let key = try P256.SigningKey.generate()
        let signature = try key.signature(for: message)
        #expect(signature.count == 64)
        #expect(key.publicKey.isValidSignature(signature, for: message))
    }

    @Test func tamperedMessageOrSignatureFails() throws {
        let key = try P256.SigningKey.generate()
        var signature = try key.signature(for: message)
        #expect(!key.publicKey.isValidSignature(signature, for: Data("header.claimz".utf8)))
        signature[10] ^= 0x01
        #expect(!key.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature.prefix(63), for: message))
    }

    @Test func anotherKeyDoesNotVerify() throws {
        let key = try P256.SigningKey.generate()
        let other = try P256.SigningKey.generate()
        #expect(!other.publicKey.isValidSignature(try key.signature(for: message), for: message))
    }

    @Test func derAndRawConvertBothWays() throws {
        let key = try P256.SigningKey.generate()
        for _ in 0..<20 {
            let raw = try key.signature(for: message)
            let der = try ECDSASignature.der(fromRaw: raw)
            #expect(der.first == 0x30)
            #expect(try ECDSASignature.raw(fromDER: der) == raw)
        }
        #expect(throws: CryptoError.self) { try ECDSASignature.der(fromRaw: Data(count: 63)) }
        #expect(throws: CryptoError.self) { try ECDSASignature.raw(fromDER: Data([0x30, 0x02, 0x01])) }
    }

    @Test(.requires(.processes)) func refusesKeysThatAreNotP256() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"))
        let p384 = try await runCommand("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"])
        let error = #expect(throws: CryptoError.self) { try P256.SigningKey(pemRepresentation: p384.output) }
        #expect(error?.code == .unsupportedKey)
        #expect(error?.description.contains("P-256") == true)
        let rsa = try await runCommand("/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
        #expect(throws: CryptoError.self) { try P256.SigningKey(pemRepresentation: rsa.output) }
        let garbage = #expect(throws: CryptoError.self) {
            try P256.SigningKey(pemRepresentation: "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
        }
        #expect(garbage?.code == .invalidKey)
    }

    /// A PEM private key holds its public point beside its scalar, and nothing in the
    /// syntax ties the two together. One whose halves disagree would sign with the
    /// scalar and verify with the point: it is refused when read.
    @Test func refusesAKeyWhosePublicHalfBelongsToAnotherKey() throws {
        // Key A's scalar with key B's public point (SEC1, as `openssl ec` writes it).
        let mismatched = """
            -----BEGIN EC PRIVATE KEY-----
            MHcCAQEEIHi6p/jN+UQHKpQ+Z6XZNqcKqAFF5iah+9Xb5aNHnzX4oAoGCCqGSM49
            AwEHoUQDQgAED3XEVE//xCgAJ7gSaOUGilFVXLwmNThm7CcKJcr+DBayVZDUCJ0G
            S7ajLNzUpvcsV2NxTOygr4d2Z/KMMKvddQ==
            -----END EC PRIVATE KEY-----
            """
        let error = #expect(throws: CryptoError.self) { try P256.SigningKey(pemRepresentation: mismatched) }
        #expect(error?.code == .invalidKey)
        #expect(error?.reason.contains("public half") == true)
        // The same key with its own point reads and verifies what it signs.
        let whole = try P256.SigningKey.generate()
        let again = try P256.SigningKey(pemRepresentation: whole.pemRepresentation)
        let signature = try again.signature(for: Data("m".utf8))
        #expect(whole.publicKey.isValidSignature(signature, for: Data("m".utf8)))
    }

    /// An encrypted key is refused as such, at once: OpenSSL's own fallback would
    /// have asked for a passphrase on the process's terminal and waited there.
    @Test func refusesEncryptedKeysWithoutAskingForAPassphrase() throws {
        let encryptedP8 = """
            -----BEGIN ENCRYPTED PRIVATE KEY-----
            MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAg6gEdvLymgwAICCAAw
            DAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEEMf8BaDtTbfrVylYyUs9mJUEgZAX
            0+FS3x0b2OJ53SoWvUhgIdJvmY6gjMigmfKd/jWwpGV+F9sn/hsABeJeZue55N4x
            NbRLhRir+0Q9DZWprhHOWZJ1b6+O84SROkmtm1wIy9DuPsNw/mn9hzVFAMIcdkVd
            prbfsoP3GgbYTQ91gRz1x+U8pZ5V+kPQQD1zL5ZHOaf4XXjKF8lrWtyeh/p8LNM=
            -----END ENCRYPTED PRIVATE KEY-----
            """
        let privateError = #expect(throws: CryptoError.self) { try P256.SigningKey(pemRepresentation: encryptedP8) }
        #expect(privateError?.code == .invalidKey)
        #expect(privateError?.reason.contains("encrypted") == true)
        let encryptedPublic = """
            -----BEGIN PUBLIC KEY-----
            Proc-Type: 4,ENCRYPTED
            DEK-Info: AES-128-CBC,00112233445566778899AABBCCDDEEFF

            MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEMQfKfMO1IkPiZ7U2SxA+ivyPfGHY
            Z+CENsrnQIwzNWy+ToE9jkoPHvCk2sWiM9mQ2szDSLFok26hPfdlCOR27w==
            -----END PUBLIC KEY-----
            """
        let publicError = #expect(throws: CryptoError.self) { try P256.VerifyingKey(pemRepresentation: encryptedPublic) }
        #expect(publicError?.code == .invalidKey)
        #expect(publicError?.reason.contains("encrypted") == true)
    }
}

@Suite("ES256 against the openssl command line", .requires(.processes))
struct OpenSSLCrossCheckTests {
    let openssl = "/usr/bin/openssl"

    @Test func opensslSignatureVerifiesHere() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: openssl))
        try await withTemporaryDirectory { dir in
            let key = try P256.SigningKey.generate()
            let keyFile = dir.appendingPathComponent("AuthKey_TEST.p8")
            let messageFile = dir.appendingPathComponent("message")
            let signatureFile = dir.appendingPathComponent("signature.der")
            try key.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            let message = Data("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJURUFNIn0".utf8)
            try message.write(to: messageFile)
            let signed = try await runCommand(openssl, ["dgst", "-sha256", "-sign", keyFile.path, "-out", signatureFile.path, messageFile.path])
            #expect(signed.status == 0, "\(signed.error)")
            let der = try Data(contentsOf: signatureFile)
            let raw = try ECDSASignature.raw(fromDER: der)
            #expect(key.publicKey.isValidSignature(raw, for: message))
        }
    }

    @Test func signatureMadeHereVerifiesWithOpenSSL() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: openssl))
        try await withTemporaryDirectory { dir in
            let key = try P256.SigningKey.generate()
            let token = try JSONWebToken.signES256(
                keyID: "ABC123DEFG", claims: ["iss": .string("DEF123GHIJ"), "iat": .integer(1_800_000_000)], key: key)
            let parsed = try JSONWebToken(parsing: token)
            let publicFile = dir.appendingPathComponent("public.pem")
            let messageFile = dir.appendingPathComponent("input")
            let signatureFile = dir.appendingPathComponent("signature.der")
            try key.publicKey.pemRepresentation.write(to: publicFile, atomically: true, encoding: .utf8)
            try Data(parsed.signingInput.utf8).write(to: messageFile)
            try ECDSASignature.der(fromRaw: parsed.signature).write(to: signatureFile)
            let verified = try await runCommand(openssl, ["dgst", "-sha256", "-verify", publicFile.path, "-signature", signatureFile.path, messageFile.path])
            #expect(verified.status == 0)
            #expect(verified.output.contains("Verified OK"))

            // The same check must fail for a tampered input.
            try Data((parsed.signingInput + "x").utf8).write(to: messageFile)
            let tampered = try await runCommand(openssl, ["dgst", "-sha256", "-verify", publicFile.path, "-signature", signatureFile.path, messageFile.path])
            #expect(tampered.status != 0)
        }
    }

    @Test func opensslGeneratedP8KeyLoads() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: openssl))
        let sec1 = try await runCommand(openssl, ["ecparam", "-name", "prime256v1", "-genkey", "-noout"])
        let pkcs8 = try await runCommand(openssl, ["pkcs8", "-topk8", "-nocrypt"], input: Data(sec1.output.utf8))
        #expect(pkcs8.output.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let key = try P256.SigningKey(pemRepresentation: pkcs8.output)
        let signature = try key.signature(for: Data("x".utf8))
        #expect(key.publicKey.isValidSignature(signature, for: Data("x".utf8)))
        // The older SEC1 form loads too.
        _ = try P256.SigningKey(pemRepresentation: sec1.output)
    }
}

@Suite("JSON Web Tokens")
struct JSONWebTokenTests {
    @Test func signedTokenParsesAndVerifies() throws {
        let key = try P256.SigningKey.generate()
        let token = try JSONWebToken.signES256(
            keyID: "KEY1234567", claims: ["iss": .string("TEAM123456"), "iat": .integer(1_800_000_123)], key: key)
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        let parsed = try JSONWebToken(parsing: token)
        #expect(parsed.header["alg"] == .string("ES256"))
        #expect(parsed.header["kid"] == .string("KEY1234567"))
        #expect(parsed.claims["iss"]?.stringValue == "TEAM123456")
        #expect(parsed.claims["iat"]?.integerValue == 1_800_000_123)
        #expect(parsed.isValidES256(using: key.publicKey))
    }

    @Test func tamperedClaimsFail() throws {
        let key = try P256.SigningKey.generate()
        let token = try JSONWebToken.signES256(keyID: "K", claims: ["iss": .string("TEAM123456"), "iat": .integer(1)], key: key)
        let parts = token.split(separator: ".").map(String.init)
        let forged = Base64URL.encode(Data(#"{"iat":1,"iss":"EVIL123456"}"#.utf8))
        let tampered = try JSONWebToken(parsing: [parts[0], forged, parts[2]].joined(separator: "."))
        #expect(tampered.claims["iss"]?.stringValue == "EVIL123456")
        #expect(!tampered.isValidES256(using: key.publicKey))
        let wrongKey = try P256.SigningKey.generate()
        #expect(try !JSONWebToken(parsing: token).isValidES256(using: wrongKey.publicKey))
    }

    @Test func malformedTokensAreRefused() {
        for bad in ["", "a.b", "a.b.c.d", "!!!.e30.AA", "e30.!!!.AA", "bm90IGpzb24.e30.AA"] {
            let error = #expect(throws: CryptoError.self) { try JSONWebToken(parsing: bad) }
            #expect(error?.code == .malformedToken)
        }
    }
}

@Suite("Digests and randomness")
struct DigestTests {
    @Test func sha256MatchesKnownVector() {
        let digest = Digest.sha256(Data("abc".utf8))
        #expect(digest.map { String(format: "%02x", $0) }.joined()
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func constantTimeEquality() {
        #expect(Digest.constantTimeEquals(Data([1, 2, 3]), Data([1, 2, 3])))
        #expect(!Digest.constantTimeEquals(Data([1, 2, 3]), Data([1, 2, 4])))
        #expect(!Digest.constantTimeEquals(Data([1, 2, 3]), Data([1, 2])))
    }

    @Test func randomBytesAreFreshEachTime() throws {
        let a = try SecureRandom.bytes(32)
        let b = try SecureRandom.bytes(32)
        #expect(a.count == 32)
        #expect(a != b)
    }

    @Test func base64URLRoundTrips() {
        let data = Data((0...255).map { UInt8($0) })
        let text = Base64URL.encode(data)
        #expect(!text.contains("+") && !text.contains("/") && !text.contains("="))
        #expect(Base64URL.decode(text) == data)
        #expect(Base64URL.decode("a+b/") == nil)
        #expect(Base64URL.decode("abcde") == nil)
    }

    @Test func libraryVersionIsOpenSSL3() {
        #expect(CryptoLibrary.version.hasPrefix("OpenSSL 3."))
    }

    @Test func aKeyThatDoesNotParseIsRefusedInASentence() {
        // OpenSSL's own strings (error:1E08010C:DECODER routines::unsupported) and the
        // code's name stay out of what users read; the detail is kept aside for logs.
        let error = #expect(throws: CryptoError.self) { try P256.SigningKey(pemRepresentation: "not a key") }
        #expect(error?.code == .invalidKey)
        #expect(error?.description.hasPrefix("the text is not a private key in PEM") == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("error:") == false)
        #expect(error?.description.contains("invalidKey") == false)
        let publicError = #expect(throws: CryptoError.self) { try P256.VerifyingKey(pemRepresentation: "not a key") }
        #expect(publicError?.description.contains("error:") == false)
    }
}
