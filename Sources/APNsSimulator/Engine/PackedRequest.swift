import Foundation

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
struct PackedRequest: Sendable {
    private let bytes: [UInt8]

    private static let lengthSize = MemoryLayout<UInt64>.size

    /// Packs `request`.
    init(_ request: SimulatorRequest) {
        let headers = request.headers
        var size = Self.lengthSize * (3 + 2 * headers.count) + request.method.utf8.count + request.path.utf8.count
        for (name, value) in headers { size += name.utf8.count + value.utf8.count }
        size += request.body.count
        bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            var writer = Writer(buffer: buffer)
            writer.write(request.method)
            writer.write(request.path)
            writer.write(UInt64(headers.count))
            for (name, value) in headers {
                writer.write(name)
                writer.write(value)
            }
            writer.write(request.body)
            initialized = writer.offset
        }
    }

    /// The request, as it was packed.
    func unpacked() -> SimulatorRequest {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = Reader(buffer: buffer)
            let method = reader.string()
            let path = reader.string()
            let count = Int(reader.length())
            var headers: [(name: String, value: String)] = []
            headers.reserveCapacity(count)
            for _ in 0..<count {
                let name = reader.string()
                headers.append((name: name, value: reader.string()))
            }
            return SimulatorRequest(method: method, path: path, headers: headers, body: reader.rest())
        }
    }

    private struct Writer {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var offset = 0

        mutating func write(_ length: UInt64) {
            withUnsafeBytes(of: length.littleEndian) { raw in
                for byte in raw {
                    buffer[offset] = byte
                    offset += 1
                }
            }
        }

        mutating func write(_ string: String) {
            var string = string
            string.withUTF8 { utf8 in
                write(UInt64(utf8.count))
                copy(UnsafeRawBufferPointer(utf8))
            }
        }

        mutating func write(_ data: Data) {
            data.withUnsafeBytes { copy($0) }
        }

        private mutating func copy(_ source: UnsafeRawBufferPointer) {
            guard let base = source.baseAddress, !source.isEmpty else { return }
            UnsafeMutableRawPointer(buffer.baseAddress! + offset).copyMemory(from: base, byteCount: source.count)
            offset += source.count
        }
    }

    private struct Reader {
        let buffer: UnsafeBufferPointer<UInt8>
        var offset = 0

        mutating func length() -> UInt64 {
            var value: UInt64 = 0
            for shift in 0..<PackedRequest.lengthSize {
                value |= UInt64(buffer[offset + shift]) << (8 * shift)
            }
            offset += PackedRequest.lengthSize
            return value
        }

        mutating func string() -> String {
            let count = Int(length())
            let text = String(decoding: UnsafeBufferPointer(rebasing: buffer[offset..<offset + count]), as: UTF8.self)
            offset += count
            return text
        }

        func rest() -> Data {
            Data(UnsafeBufferPointer(rebasing: buffer[offset...]))
        }
    }
}
