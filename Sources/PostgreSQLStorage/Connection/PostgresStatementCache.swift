internal import CPostgres

/// The names of the statements one connection has prepared, by text and parameter
/// types: the same text with other types (a NULL where a number was) is another
/// statement on the server, whose parameter types are fixed when it is prepared.
///
/// Bounded: when it is full the connection deallocates every statement and starts
/// again (`DEALLOCATE ALL`), which costs one more prepare per statement in use and
/// keeps the server's memory per connection bounded.
struct PostgresStatementCache {
    /// A prepared statement's identity.
    struct Key: Hashable {
        var text: String
        var types: [Oid]
    }

    /// How many statements may be prepared at once.
    let capacity: Int
    private var names: [Key: String] = [:]
    private var lastNumber = 0

    /// An empty cache of `capacity` statements.
    init(capacity: Int = 256) {
        self.capacity = capacity
    }

    /// The name `key` was prepared under, if it was.
    func name(for key: Key) -> String? { names[key] }

    /// Whether the next statement prepared must first make room.
    var isFull: Bool { names.count >= capacity }

    /// A name never used on this connection: `islet_1`, `islet_2`, …
    mutating func nextName() -> String {
        lastNumber += 1
        return "islet_\(lastNumber)"
    }

    /// Records that `key` is now prepared as `name`.
    mutating func insert(_ key: Key, name: String) {
        names[key] = name
    }

    /// Forgets every statement (after `DEALLOCATE ALL`).
    mutating func removeAll() {
        names.removeAll(keepingCapacity: true)
    }

    /// How many statements are prepared.
    var count: Int { names.count }
}
