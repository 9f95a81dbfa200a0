internal import CNGHTTP2

/// Header fields written into one buffer that a connection reuses for every
/// request or response, and handed to nghttp2 as name/value pairs (which nghttp2
/// copies when the message is submitted). Fields written before `pin` stay across
/// `reset`. Confined to its connection's loop thread.
final class HeaderBlock {
    /// A field's place in the buffer.
    struct Field {
        var nameStart: Int
        var valueStart: Int
        var end: Int
        var neverIndexed: Bool
    }

    private var storage: UnsafeMutableRawPointer
    private var capacity = 512
    private var used = 0
    private var pinned = 0
    /// The regular fields written since `reset`, in order.
    private var fields: [Field] = []
    /// Names the configuration sends as never-indexed literals.
    private let unindexed: [String]

    init(unindexed: [String]) {
        self.unindexed = unindexed
        storage = .allocate(byteCount: capacity, alignment: 1)
        fields.reserveCapacity(16)
    }

    deinit {
        storage.deallocate()
    }

    /// Writes a field without listing it among the regular ones (a pseudo-header
    /// field, which goes first): `value` followed by `suffix`, if any.
    func write(_ name: String, _ value: String, _ suffix: String? = nil, neverIndexed: Bool = false) -> Field {
        let start = used
        copy(name)
        let valueStart = used
        copy(value)
        if let suffix { copy(suffix) }
        return Field(nameStart: start, valueStart: valueStart, end: used, neverIndexed: neverIndexed || isUnindexed(name))
    }

    /// Adds a regular field.
    func append(_ name: String, _ value: String, neverIndexed: Bool = false) {
        fields.append(write(name, value, neverIndexed: neverIndexed))
    }

    /// Adds a regular field with a decimal value.
    func append(_ name: String, _ value: Int) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: any Int fits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var magnitude = value.magnitude
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                index -= 1
                buffer[index] = UInt8(ascii: "-")
            }
            let start = used
            copy(name)
            let valueStart = used
            copy(UnsafeRawBufferPointer(rebasing: buffer[index...]))
            fields.append(Field(nameStart: start, valueStart: valueStart, end: used, neverIndexed: isUnindexed(name)))
        }
    }

    /// Keeps what is written so far across every later `reset`.
    func pin() {
        pinned = used
    }

    /// Forgets what was written since `pin`.
    func reset() {
        used = pinned
        fields.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with the nghttp2 name/value pairs of the `leading` fields that
    /// `leadingField` gives (pseudo-header fields, which HTTP/2 wants first), then
    /// the regular fields written since `reset`.
    func withNameValues<R>(
        leading: Int, _ leadingField: (Int) -> Field, _ body: (UnsafePointer<nghttp2_nv>, Int) -> R
    ) -> R {
        let count = leading + fields.count
        return withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: count) { nva in
            let base = storage.assumingMemoryBound(to: UInt8.self)
            func nv(_ field: Field) -> nghttp2_nv {
                nghttp2_nv(
                    name: base + field.nameStart, value: base + field.valueStart, namelen: field.valueStart - field.nameStart,
                    valuelen: field.end - field.valueStart,
                    flags: UInt8((field.neverIndexed ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE).rawValue))
            }
            for index in 0..<leading { nva[index] = nv(leadingField(index)) }
            for index in fields.indices { nva[leading + index] = nv(fields[index]) }
            return body(nva.baseAddress!, count)
        }
    }

    private func isUnindexed(_ name: String) -> Bool {
        !unindexed.isEmpty && unindexed.contains(name)
    }

    private func copy(_ text: String) {
        var text = text
        text.withUTF8 { copy(UnsafeRawBufferPointer($0)) }
    }

    private func copy(_ bytes: UnsafeRawBufferPointer) {
        reserve(bytes.count)
        if let source = bytes.baseAddress { (storage + used).copyMemory(from: source, byteCount: bytes.count) }
        used += bytes.count
    }

    private func reserve(_ count: Int) {
        guard used + count > capacity else { return }
        let grown = max(capacity * 2, used + count)
        let larger = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 1)
        larger.copyMemory(from: storage, byteCount: used)
        storage.deallocate()
        storage = larger
        capacity = grown
    }
}
