import Foundation
import HTTP2

/// A request's method, path, header fields and body, copied into one buffer.
///
/// The push history keeps thousands of requests; kept as they arrive, each would
/// hold a handful of separate allocations (the path, the header list, the provider
/// token and other long values, the body), all to be freed when the push leaves the
/// history. Packed, it holds one.
///
/// Layout: the method, the path, the number of fields, each field's name and value,
/// each string preceded by its length in UTF-8 bytes (8 bytes, little-endian); then
/// the body, to the end.
///
/// `@unchecked Sendable`: the bytes are written once, by ``init(_:)``, before the
/// storage can be shared, and only read after.
struct PackedRequest: @unchecked Sendable {
    private let storage: Storage

    private static let lengthSize = MemoryLayout<UInt64>.size

    /// Packs `request`.
    init(_ request: SimulatorRequest) {
        let fields = request.fields
        let size = Self.lengthSize * (3 + 2 * fields.count) + request.method.utf8.count + request.path.utf8.count + fields.byteCount
        let bodyOffset = size
        storage = Storage.make(Layout(count: size + request.body.count, bodyOffset: bodyOffset))
        storage.withUnsafeMutablePointerToElements { elements in
            let base = UnsafeMutableRawPointer(elements)
            var offset = Self.put(request.method, at: base, offset: 0)
            offset = Self.put(request.path, at: base, offset: offset)
            base.storeBytes(of: UInt64(fields.count).littleEndian, toByteOffset: offset, as: UInt64.self)
            offset += Self.lengthSize
            for index in 0..<fields.count {
                offset = fields.withName(at: index) { Self.put($0, at: base, offset: offset) }
                offset = fields.withValue(at: index) { Self.put($0, at: base, offset: offset) }
            }
            request.body.withUnsafeBytes { body in
                if let source = body.baseAddress { (base + bodyOffset).copyMemory(from: source, byteCount: body.count) }
            }
        }
    }

    /// Writes the length of `bytes` and the bytes at `offset`; answers the offset
    /// past them.
    private static func put(_ bytes: UnsafeRawBufferPointer, at base: UnsafeMutableRawPointer, offset: Int) -> Int {
        base.storeBytes(of: UInt64(bytes.count).littleEndian, toByteOffset: offset, as: UInt64.self)
        let start = offset + lengthSize
        if let source = bytes.baseAddress, bytes.count > 0 { (base + start).copyMemory(from: source, byteCount: bytes.count) }
        return start + bytes.count
    }

    /// Writes `string`'s length and UTF-8 bytes at `offset`; answers the offset past
    /// them.
    private static func put(_ string: String, at base: UnsafeMutableRawPointer, offset: Int) -> Int {
        var string = string
        return string.withUTF8 { put(UnsafeRawBufferPointer($0), at: base, offset: offset) }
    }

    /// Calls `body` with the request body's bytes.
    func withBody<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try storage.withUnsafeMutablePointers { (layout, elements) throws(Failure) -> Result in
            let layout = layout.pointee
            return try body(UnsafeRawBufferPointer(start: elements + layout.bodyOffset, count: layout.count - layout.bodyOffset))
        }
    }

    /// The request, as it was packed.
    func unpacked() -> SimulatorRequest {
        storage.withUnsafeMutablePointers { layout, elements in
            let raw = UnsafeRawBufferPointer(start: elements, count: layout.pointee.count)
            var offset = 0
            func length() -> Int {
                let value = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                offset += Self.lengthSize
                return Int(UInt64(littleEndian: value))
            }
            func bytes() -> UnsafeRawBufferPointer {
                let count = length()
                let slice = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + count)])
                offset += count
                return slice
            }
            let method = String(decoding: bytes(), as: UTF8.self)
            let path = String(decoding: bytes(), as: UTF8.self)
            let count = length()
            var fields = HTTP2HeaderFields()
            for _ in 0..<count {
                let name = bytes()
                fields.append(name: name, value: bytes())
            }
            return SimulatorRequest(method: method, path: path, fields: fields, body: Data(raw[offset...]))
        }
    }

    /// How many bytes there are, and where the body starts.
    private struct Layout {
        var count: Int
        var bodyOffset: Int
    }

    /// The bytes, after their layout, in one allocation.
    private final class Storage: ManagedBuffer<Layout, UInt8> {
        static func make(_ layout: Layout) -> Storage {
            unsafeDowncast(create(minimumCapacity: layout.count) { _ in layout }, to: Storage.self)
        }
    }
}
