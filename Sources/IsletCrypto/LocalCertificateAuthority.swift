internal import COpenSSL
import Foundation

/// A certificate authority made on the spot, and a server certificate it signed: what
/// a local TLS server (the APNs simulator, tests) needs without any outside CA.
public struct LocalCertificateAuthority: Sendable {
    /// The CA certificate, in PEM: what clients trust.
    public let caCertificatePEM: String
    /// The server certificate followed by the CA certificate, in PEM.
    public let serverCertificateChainPEM: String
    /// The server's private key (P-256), in PKCS#8 PEM.
    public let serverPrivateKeyPEM: String

    /// Makes a CA and a server certificate valid for `hosts` (names and IP
    /// addresses) for `days` days.
    public static func generate(
        commonName: String = "Islet local CA",
        hosts: [String] = ["localhost", "127.0.0.1", "::1"],
        days: Int = 825
    ) throws(CryptoError) -> LocalCertificateAuthority {
        let caKey = try P256.SigningKey.generate()
        let serverKey = try P256.SigningKey.generate()
        let ca = try makeCertificate(
            subject: commonName, issuer: nil, key: caKey.key, signer: caKey.key, serial: 1, days: days,
            extensions: [(NID_basic_constraints, "critical,CA:TRUE"), (NID_key_usage, "critical,keyCertSign,cRLSign")])
        defer { X509_free(ca) }
        let subjectAlternativeNames = hosts.map { host in
            host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) ? "IP:\(host)" : "DNS:\(host)"
        }.joined(separator: ",")
        let server = try makeCertificate(
            subject: hosts.first ?? "localhost", issuer: ca, key: serverKey.key, signer: caKey.key, serial: 2, days: days,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"),
                (NID_key_usage, "critical,digitalSignature,keyEncipherment"),
                (NID_ext_key_usage, "serverAuth"),
                (NID_subject_alt_name, subjectAlternativeNames),
            ])
        defer { X509_free(server) }
        let caPEM = try pem(of: ca)
        return LocalCertificateAuthority(
            caCertificatePEM: caPEM,
            serverCertificateChainPEM: try pem(of: server) + caPEM,
            serverPrivateKeyPEM: serverKey.pemRepresentation)
    }

    private static func makeCertificate(
        subject: String, issuer: OpaquePointer?, key: EVPKey, signer: EVPKey, serial: Int, days: Int,
        extensions: [(Int32, String)]
    ) throws(CryptoError) -> OpaquePointer {
        guard let certificate = X509_new() else { throw CryptoError.openSSL(.signingFailed, "cannot allocate a certificate") }
        var ok = X509_set_version(certificate, 2) == 1
        ok = ok && ASN1_INTEGER_set(X509_get_serialNumber(certificate), serial) == 1
        ok = ok && X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) != nil
        ok = ok && X509_gmtime_adj(X509_getm_notAfter(certificate), days * 86_400) != nil
        ok = ok && X509_set_pubkey(certificate, key.pointer) == 1
        let name = X509_get_subject_name(certificate)
        ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, subject, -1, -1, 0) == 1
        ok = ok && X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0) } ?? name) == 1
        var context = X509V3_CTX()
        islet_x509v3_ctx_nodb(&context)
        X509V3_set_ctx(&context, issuer ?? certificate, certificate, nil, nil, 0)
        for (nid, value) in extensions where ok {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                ok = false
                break
            }
            ok = X509_add_ext(certificate, ext, -1) == 1
            X509_EXTENSION_free(ext)
        }
        ok = ok && X509_sign(certificate, signer.pointer, EVP_sha256()) > 0
        guard ok else {
            X509_free(certificate)
            throw CryptoError.openSSL(.signingFailed, "cannot build the certificate for \(subject)")
        }
        return certificate
    }

    private static func pem(of certificate: OpaquePointer) throws(CryptoError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw CryptoError.openSSL(.signingFailed, "out of memory") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, certificate) == 1 else { throw CryptoError.openSSL(.signingFailed, "cannot write PEM") }
        var data: UnsafePointer<CChar>?
        let length = islet_bio_mem_data(bio, &data)
        guard let data, length > 0 else { throw CryptoError.openSSL(.signingFailed, "cannot write PEM") }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}
