import Glibc

/// Header fields in arrival order, every name and value kept as bytes in one
/// buffer. A server reads requests into it without making a `String` per field;
/// a field becomes text only when asked for. Names are lowercase (HTTP/2 requires
/// it) and may repeat.
public struct HTTP2HeaderFields: Sendable {
    /// The names and values, one after the other.
    @usableFromInline var bytes: [UInt8] = []
    /// For field `i`: where its name ends (`2i`) and where its value ends (`2i + 1`).
    @usableFromInline var ends: [UInt32] = []

    /// No fields.
    public init() {}

    /// The fields `pairs`, in order.
    public init(_ pairs: [(name: String, value: String)]) {
        bytes.reserveCapacity(pairs.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count })
        ends.reserveCapacity(pairs.count * 2)
        for (name, value) in pairs { append(name: name, value: value) }
    }

    /// How many fields there are.
    @inlinable public var count: Int { ends.count / 2 }

    /// Whether there are none.
    public var isEmpty: Bool { ends.isEmpty }

    /// Bytes of names and values together.
    @inlinable public var byteCount: Int { bytes.count }

    /// Adds a field.
    public mutating func append(name: String, value: String) {
        bytes.append(contentsOf: name.utf8)
        ends.append(UInt32(bytes.count))
        bytes.append(contentsOf: value.utf8)
        ends.append(UInt32(bytes.count))
    }

    /// Adds a field from bytes.
    public mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: name)
        ends.append(UInt32(bytes.count))
        bytes.append(contentsOf: value)
        ends.append(UInt32(bytes.count))
    }

    /// Forgets every field, keeping the storage when no one else holds it.
    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
    }

    /// Reserves room for `count` fields of `byteCount` bytes in all.
    mutating func reserveCapacity(fields count: Int, bytes byteCount: Int) {
        ends.reserveCapacity(count * 2)
        bytes.reserveCapacity(byteCount)
    }

    @inlinable func nameRange(_ index: Int) -> Range<Int> {
        (index == 0 ? 0 : Int(ends[2 * index - 1]))..<Int(ends[2 * index])
    }

    @inlinable func valueRange(_ index: Int) -> Range<Int> {
        Int(ends[2 * index])..<Int(ends[2 * index + 1])
    }

    /// Calls `body` with the bytes of field `index`'s name.
    @inlinable
    public func withName<R>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let range = nameRange(index)
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// Calls `body` with the bytes of field `index`'s value.
    @inlinable
    public func withValue<R>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let range = valueRange(index)
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// Field `index`'s name.
    public func name(at index: Int) -> String {
        withName(at: index) { HeaderBytes.text($0) }
    }

    /// Field `index`'s value.
    public func value(at index: Int) -> String {
        withValue(at: index) { HeaderBytes.text($0) }
    }

    /// Whether field `index` is named `name` (lowercase).
    public func field(_ index: Int, isNamed name: String) -> Bool {
        withName(at: index) { HeaderBytes.equals($0, name) }
    }

    /// The position of the first field named `name` (lowercase).
    public func firstIndex(of name: String) -> Int? {
        for index in 0..<count where field(index, isNamed: name) { return index }
        return nil
    }

    /// The value of the first field named `name` (lowercase).
    public func first(_ name: String) -> String? {
        firstIndex(of: name).map { value(at: $0) }
    }

    /// The fields as text, in order.
    public var pairs: [(name: String, value: String)] {
        (0..<count).map { (name(at: $0), value(at: $0)) }
    }
}
