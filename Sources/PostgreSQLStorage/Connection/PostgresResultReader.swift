internal import CPostgres
import Foundation
import SQLStorage
import Storage

/// Reads a libpq result in text form into rows, each column by its type:
/// `int2`, `int4`, `int8` and `oid` as integers; `float4`, `float8` and `numeric` as
/// reals; `bool` as booleans; `bytea` as blobs; NULL as `.null`; every other type
/// (text, JSON, timestamps, arrays…) as its text.
enum PostgresResultReader {
    /// Every row of `result`, sharing one list of column names.
    static func rows(of result: OpaquePointer) throws(StoreError) -> [SQLRow] {
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        guard rowCount > 0 else { return [] }
        let columns = 0..<columnCount
        let names = columns.map { String(cString: PQfname(result, $0)) }
        let types = columns.map { PQftype(result, $0) }
        var rows: [SQLRow] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in columns {
                values.append(try value(result, row: row, column: column, type: types[Int(column)], name: names[Int(column)]))
            }
            rows.append(SQLRow(values: values, names: names))
        }
        return rows
    }

    /// How many rows the statement of `result` changed (`PQcmdTuples`), 0 when it
    /// says nothing.
    static func changedRows(of result: OpaquePointer) -> Int {
        guard let text = PQcmdTuples(result) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    /// One cell.
    private static func value(_ result: OpaquePointer, row: Int32, column: Int32, type: Oid, name: String) throws(StoreError)
        -> SQLValue
    {
        if PQgetisnull(result, row, column) != 0 { return .null }
        guard let pointer = PQgetvalue(result, row, column) else { return .null }
        let length = Int(PQgetlength(result, row, column))
        let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
        switch type {
        case PostgresType.int2, PostgresType.int4, PostgresType.int8, PostgresType.oid:
            guard let number = Int64(String(decoding: bytes, as: UTF8.self)) else {
                throw StoreError(.corrupt, "column \(name) does not read as an integer")
            }
            return .integer(number)
        case PostgresType.float4, PostgresType.float8, PostgresType.numeric:
            guard let number = real(String(decoding: bytes, as: UTF8.self)) else {
                throw StoreError(.corrupt, "column \(name) does not read as a number")
            }
            return .real(number)
        case PostgresType.bool:
            return .bool(length == 1 && bytes[0] == UInt8(ascii: "t"))
        case PostgresType.bytea:
            return .blob(try blob(pointer, column: name))
        default:
            return .text(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// A number in float8's or numeric's text form, the special values included.
    static func real(_ text: String) -> Double? {
        switch text {
        case "NaN": .nan
        case "Infinity": .infinity
        case "-Infinity": -.infinity
        default: Double(text)
        }
    }

    /// The bytes of a `bytea` in its text form (hex, `\x…`, or the older escaped form).
    private static func blob(_ pointer: UnsafeMutablePointer<CChar>, column: String) throws(StoreError) -> Data {
        var count = 0
        let unescaped = pointer.withMemoryRebound(to: UInt8.self, capacity: 1) { PQunescapeBytea($0, &count) }
        guard let unescaped else { throw StoreError(.corrupt, "column \(column) does not read as bytes") }
        defer { PQfreemem(unescaped) }
        return Data(bytes: unescaped, count: count)
    }
}
