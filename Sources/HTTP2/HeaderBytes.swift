import Glibc

/// Header fields as bytes: reading them from nghttp2 without a `String` where one
/// is not needed (`HeaderBlock` writes them).
/// The comparisons are public, for readers of `HTTP2HeaderFields`.
public enum HeaderBytes {
    /// The field's text.
    static func text(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `bytes` spell `text`.
    public static func equals(_ bytes: UnsafeRawBufferPointer, _ text: String) -> Bool {
        guard bytes.count == text.utf8.count else { return false }
        if bytes.count == 0 { return true }
        if let same = text.utf8.withContiguousStorageIfAvailable({ memcmp(bytes.baseAddress!, $0.baseAddress!, bytes.count) == 0 }) {
            return same
        }
        return bytes.elementsEqual(text.utf8)
    }

    /// A decimal number of up to nine digits, such as a `:status`; `nil` otherwise.
    static func smallInteger(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 9 else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// The text of `:status` for common statuses, without formatting a number.
    static func statusText(_ status: Int) -> String {
        switch status {
        case 200: "200"
        case 400: "400"
        case 403: "403"
        case 404: "404"
        case 405: "405"
        case 410: "410"
        case 413: "413"
        case 429: "429"
        case 500: "500"
        case 503: "503"
        default: String(status)
        }
    }
}
