internal import CNGHTTP2

/// Facts about the linked libnghttp2.
public enum HTTP2Library {
    /// The runtime version of libnghttp2, for example `1.52.0`.
    public static var version: String { String(cString: islet_nghttp2_version_string()) }
}
