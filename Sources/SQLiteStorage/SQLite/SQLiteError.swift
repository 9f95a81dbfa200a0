internal import CSQLite
public import Storage

/// A failure reported by SQLite. Its description carries SQLite's message and result
/// code, never the SQL text or bound values.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The failure class; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case cannotOpen, notADatabase, busy, constraint, readOnly, misuse, closed, migration, other
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file could not be opened or created.
        public static let cannotOpen = Code(.cannotOpen)
        /// The file exists but is not an SQLite database.
        public static let notADatabase = Code(.notADatabase)
        /// Another connection held a lock for longer than the busy timeout.
        public static let busy = Code(.busy)
        /// A UNIQUE, NOT NULL, CHECK or foreign-key constraint failed.
        public static let constraint = Code(.constraint)
        /// The database is read-only.
        public static let readOnly = Code(.readOnly)
        /// The API was used wrongly (a closed connection, a bad bind index).
        public static let misuse = Code(.misuse)
        /// The database was closed before the call.
        public static let closed = Code(.closed)
        /// A migration could not be applied, or the applied history does not match.
        public static let migration = Code(.migration)
        /// Any other SQLite failure; `resultCode` tells which.
        public static let other = Code(.other)

        public var description: String { base.rawValue }

        static func from(resultCode: Int32) -> Code {
            switch resultCode & 0xFF {
            case SQLITE_CANTOPEN: .cannotOpen
            case SQLITE_NOTADB: .notADatabase
            case SQLITE_BUSY, SQLITE_LOCKED: .busy
            case SQLITE_CONSTRAINT: .constraint
            case SQLITE_READONLY: .readOnly
            case SQLITE_MISUSE, SQLITE_RANGE: .misuse
            default: .other
            }
        }
    }

    /// The failure class.
    public let code: Code
    /// SQLite's extended result code (0 for errors raised by Islet itself).
    public let resultCode: Int32
    /// SQLite's explanation, or Islet's.
    public let message: String

    /// Creates an error.
    public init(code: Code, resultCode: Int32 = 0, message: String) {
        self.code = code
        self.resultCode = resultCode
        self.message = message
    }

    init(resultCode: Int32, handle: OpaquePointer?) {
        let text = handle.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(resultCode))
        self.init(code: .from(resultCode: resultCode), resultCode: resultCode, message: text)
    }

    public var description: String {
        resultCode == 0 ? "sqlite \(code): \(message)" : "sqlite \(code) (\(resultCode)): \(message)"
    }
}

extension SQLiteError {
    /// The same failure in the store's backend-neutral terms, with SQLite's message:
    /// a broken constraint is a conflict; a lock held too long is busy; a file that
    /// cannot be opened, read, written or grown, or a closed database, is
    /// unavailable; anything else (a damaged file, a file that is not a database, a
    /// migration history Islet cannot apply) is corrupt.
    public var storeError: StoreError {
        if resultCode != 0 {
            switch resultCode & 0xFF {
            case SQLITE_CONSTRAINT: return StoreError(.conflict, message)
            case SQLITE_BUSY, SQLITE_LOCKED: return StoreError(.busy, message)
            case SQLITE_CANTOPEN, SQLITE_IOERR, SQLITE_FULL, SQLITE_READONLY: return StoreError(.unavailable, message)
            default: return StoreError(.corrupt, message)
            }
        }
        switch code {
        case .constraint: return StoreError(.conflict, message)
        case .busy: return StoreError(.busy, message)
        case .cannotOpen, .readOnly, .closed: return StoreError(.unavailable, message)
        default: return StoreError(.corrupt, message)
        }
    }
}

/// Runs `body`, turning an `SQLiteError` it throws into its ``SQLiteError/storeError``;
/// every other error passes through unchanged.
func mappingSQLiteErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as SQLiteError {
        throw error.storeError
    }
}
