internal import COpenSSL

/// The version of the OpenSSL library linked at run time.
public enum CryptoLibrary {
    /// For example `OpenSSL 3.0.22 ...`.
    public static var version: String { String(cString: OpenSSL_version(OPENSSL_VERSION)) }
}
