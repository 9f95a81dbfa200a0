internal import CPostgres
import Foundation
import SQLStorage
import Storage

/// The PostgreSQL type OIDs Islet binds and reads (from `pg_type`).
enum PostgresType {
    static let bool: Oid = 16
    static let bytea: Oid = 17
    static let int8: Oid = 20
    static let int2: Oid = 21
    static let int4: Oid = 23
    static let text: Oid = 25
    static let oid: Oid = 26
    static let float4: Oid = 700
    static let float8: Oid = 701
    static let boolArray: Oid = 1000
    static let byteaArray: Oid = 1001
    static let textArray: Oid = 1009
    static let int8Array: Oid = 1016
    static let float8Array: Oid = 1022
    static let numeric: Oid = 1700
    /// No type: the server infers it from where the parameter stands.
    static let unspecified: Oid = 0
}

/// A statement's values as libpq takes them: a type, bytes, a length and a format
/// per parameter. Blobs go in binary form (bytea's binary form is the bytes
/// themselves); everything else in text form, NUL-terminated.
struct PostgresParameters {
    /// Each parameter's type OID, for `PQprepare`.
    private(set) var types: [Oid] = []
    /// Every value's bytes, one after the other.
    private var bytes: [UInt8] = []
    /// Where each value starts in `bytes`, or `nil` for NULL.
    private var offsets: [Int?] = []
    /// Each value's length (read for binary values only).
    private var lengths: [Int32] = []
    /// Each value's format: 0 text, 1 binary.
    private var formats: [Int32] = []

    /// The parameters for `values`; throws `StoreError(.corrupt, …)` for a value
    /// PostgreSQL cannot take (text with a NUL character, an array of mixed kinds).
    init(_ values: [SQLValue]) throws(StoreError) {
        types.reserveCapacity(values.count)
        for (index, value) in values.enumerated() {
            switch value {
            case .null:
                types.append(PostgresType.unspecified)
                offsets.append(nil)
                lengths.append(0)
                formats.append(0)
            case .blob(let data):
                types.append(PostgresType.bytea)
                offsets.append(bytes.count)
                bytes.append(contentsOf: data)
                lengths.append(Int32(data.count))
                formats.append(1)
            default:
                let (type, text) = try Self.text(of: value, parameter: index + 1)
                types.append(type)
                offsets.append(bytes.count)
                bytes.append(contentsOf: text.utf8)
                bytes.append(0)
                lengths.append(0)
                formats.append(0)
            }
        }
        // One byte more, so that an empty blob still has an address: libpq takes a
        // missing one for NULL.
        bytes.append(0)
    }

    /// How many parameters there are.
    var count: Int32 { Int32(types.count) }

    /// Calls `body` with the arrays `PQexecPrepared` takes: values, lengths, formats.
    func withPointers<Result>(
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) throws(StoreError) -> Result
    ) throws(StoreError) -> Result {
        let result: Swift.Result<Result, StoreError> = bytes.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!)
            let pointers: [UnsafePointer<CChar>?] = offsets.map { offset in
                offset.map { (base + $0).assumingMemoryBound(to: CChar.self) }
            }
            return pointers.withUnsafeBufferPointer { values in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        do throws(StoreError) {
                            return .success(try body(values.baseAddress, lengths.baseAddress, formats.baseAddress))
                        } catch {
                            return .failure(error)
                        }
                    }
                }
            }
        }
        return try result.get()
    }

    // MARK: - Text forms

    /// The type and text form of a value other than NULL or a blob.
    private static func text(of value: SQLValue, parameter: Int) throws(StoreError) -> (Oid, String) {
        switch value {
        case .integer(let number): return (PostgresType.int8, String(number))
        case .real(let number): return (PostgresType.float8, realText(number))
        case .bool(let flag): return (PostgresType.bool, flag ? "t" : "f")
        case .text(let text): return (PostgresType.text, try checked(text, parameter: parameter))
        case .array(let elements): return try arrayText(elements, parameter: parameter)
        case .null, .blob: preconditionFailure("NULL and blobs are not bound as text")
        }
    }

    /// A double as float8's input reads it, the special values included.
    static func realText(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        return "\(number)"
    }

    /// `text`, when PostgreSQL can store it: its text type has no NUL character.
    private static func checked(_ text: String, parameter: Int) throws(StoreError) -> String {
        guard !text.utf8.contains(0) else {
            throw StoreError(.corrupt, "parameter $\(parameter) holds a NUL character, which PostgreSQL text cannot store")
        }
        return text
    }

    /// An array's type and its literal, `{"a","b\"c",NULL}`: every element quoted,
    /// with `"` and `\` escaped. The elements' kind picks the type: text, integers,
    /// reals (integers among them read as reals), booleans or blobs. An empty array,
    /// or one of NULLs alone, has no type of its own: the server gives it the type of
    /// where it stands, so that `id = ANY($1)` matches nothing whatever `id` is (as
    /// `text[]` it would fail on an integer column: there is no `bigint = text`).
    private static func arrayText(_ elements: [SQLValue], parameter: Int) throws(StoreError) -> (Oid, String) {
        var kinds = Set<Oid>()
        for element in elements {
            switch element {
            case .null: break
            case .integer: kinds.insert(PostgresType.int8Array)
            case .real: kinds.insert(PostgresType.float8Array)
            case .text: kinds.insert(PostgresType.textArray)
            case .bool: kinds.insert(PostgresType.boolArray)
            case .blob: kinds.insert(PostgresType.byteaArray)
            case .array:
                throw StoreError(.corrupt, "parameter $\(parameter) is an array of arrays, which Islet does not bind")
            }
        }
        if kinds == [PostgresType.int8Array, PostgresType.float8Array] { kinds = [PostgresType.float8Array] }
        guard kinds.count <= 1 else {
            throw StoreError(.corrupt, "parameter $\(parameter) is an array of values of different kinds")
        }
        var literal = "{"
        for (index, element) in elements.enumerated() {
            if index > 0 { literal += "," }
            let text: String
            switch element {
            case .null:
                literal += "NULL"
                continue
            case .integer(let number): text = String(number)
            case .real(let number): text = realText(number)
            case .text(let value): text = try checked(value, parameter: parameter)
            case .bool(let flag): text = flag ? "t" : "f"
            case .blob(let data): text = "\\x" + data.map { String(format: "%02x", $0) }.joined()
            case .array: preconditionFailure("refused above")
            }
            literal += "\""
            for character in text.unicodeScalars {
                if character == "\"" || character == "\\" { literal += "\\" }
                literal.unicodeScalars.append(character)
            }
            literal += "\""
        }
        literal += "}"
        return (kinds.first ?? PostgresType.unspecified, literal)
    }
}
