internal import HTTP2

/// The libraries the APNs client runs on, for those who report them (the version
/// route) without depending on the transport themselves.
public enum APNsLibraries {
    /// The runtime version of the libnghttp2 the client's HTTP/2 connections use,
    /// for example `1.52.0`.
    public static var nghttp2Version: String { HTTP2Library.version }
}
