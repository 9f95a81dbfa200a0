internal import CNGHTTP2
import Glibc

/// Header fields as bytes: reading them from nghttp2 without a `String` where one
/// is not needed, and handing them to nghttp2 without building an array of pairs.
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

/// Calls `body` with nghttp2 name/value pairs for the `fixed` fields followed by
/// `headers`; nghttp2 copies them during the call. All names and values share one
/// buffer, and no array of pairs is built. Fields named in `unindexed` are sent as
/// literals that HPACK never indexes: a value that differs on every message (an
/// id) would only push useful entries out of both ends' tables.
func withNameValues<R>(
    _ fixed: (String, String)..., headers: [(name: String, value: String)], unindexed: [String] = [],
    _ body: (UnsafePointer<nghttp2_nv>, Int) -> R
) -> R {
    // Read through buffer pointers: no copy of each pair, so no retain and release
    // of its strings, on both passes.
    fixed.withUnsafeBufferPointer { fixed in
        headers.withUnsafeBufferPointer { headers in
            var total = 0
            for index in fixed.indices { total += fixed[index].0.utf8.count + fixed[index].1.utf8.count }
            for index in headers.indices { total += headers[index].name.utf8.count + headers[index].value.utf8.count }
            let count = fixed.count + headers.count
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, total)) { storage in
                withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(1, count)) { nva in
                    var offset = 0
                    var slot = 0
                    func add(_ name: String, _ value: String) {
                        let nameStart = offset
                        offset = copyUTF8(name, into: storage, at: offset)
                        let valueStart = offset
                        offset = copyUTF8(value, into: storage, at: offset)
                        let flags = !unindexed.isEmpty && unindexed.contains(name) ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE
                        (nva.baseAddress! + slot).initialize(to: nghttp2_nv(
                            name: storage.baseAddress! + nameStart, value: storage.baseAddress! + valueStart,
                            namelen: valueStart - nameStart, valuelen: offset - valueStart, flags: UInt8(flags.rawValue)))
                        slot += 1
                    }
                    for index in fixed.indices { add(fixed[index].0, fixed[index].1) }
                    for index in headers.indices { add(headers[index].name, headers[index].value) }
                    return body(nva.baseAddress!, count)
                }
            }
        }
    }
}

/// Copies `text`'s UTF-8 bytes into `buffer` at `offset`; answers the offset after.
private func copyUTF8(_ text: String, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) -> Int {
    let count = text.utf8.count
    guard count > 0 else { return offset }
    let copied: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
        (buffer.baseAddress! + offset).update(from: bytes.baseAddress!, count: count)
    }
    if copied == nil {
        _ = UnsafeMutableBufferPointer(rebasing: buffer[offset..<(offset + count)]).initialize(from: text.utf8)
    }
    return offset + count
}
