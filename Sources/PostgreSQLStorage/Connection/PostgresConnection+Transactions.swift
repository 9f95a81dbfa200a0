internal import CPostgres
public import SQLStorage
public import Storage

extension PostgresConnection {
    /// Starts a transaction with `statements` (`BEGIN …`, then any `SET LOCAL`),
    /// sent only with the transaction's first statement, in one round trip with it
    /// (libpq's pipeline mode): a transaction costs its statements and its commit,
    /// not one more trip for its start.
    public func begin(_ statements: [String]) {
        pendingBegin = statements
    }

    /// Commits the transaction; one that ran no statement was never started, and
    /// ends here at no cost.
    public func commit() throws(StoreError) {
        if pendingBegin != nil {
            pendingBegin = nil
            return
        }
        // PostgreSQL answers the COMMIT of a failed transaction with ROLLBACK, and no
        // error: that is no commit.
        guard try execute(returningTag: "COMMIT") == "COMMIT" else {
            throw StoreError(.corrupt, "the transaction had failed, and was rolled back instead of committed")
        }
    }

    /// Rolls the transaction back (nothing to do for one never started, or on a
    /// broken connection).
    public func rollback() {
        if pendingBegin != nil {
            pendingBegin = nil
            return
        }
        if !isBroken && inTransaction { try? execute("ROLLBACK") }
    }

    /// Sends the pending start of a transaction on its own, before a statement that
    /// cannot go with it (a simple query, a statement being prepared).
    func flushPendingBegin() throws(StoreError) {
        guard let statements = pendingBegin else { return }
        pendingBegin = nil
        for statement in statements { try execute(statement) }
    }

    /// Runs the prepared statement `name`, after the pending start of a transaction
    /// when there is one, in one pipeline (see ``executePipelined(_:begin:statements:)``).
    /// Answers the statement's result (the caller clears it).
    func executePipelined(
        _ connection: OpaquePointer, begin: [String], name: String, _ parameters: PostgresParameters
    ) throws(StoreError) -> OpaquePointer {
        try executePipelined(connection, begin: begin, statements: [(name, parameters)])[0]
    }

    /// Runs the prepared `statements`, after `begin` (the start of a transaction, or
    /// nothing), in one pipeline: every query sent, then a sync, then every result
    /// read in order; one round trip in all. Answers each statement's result (the
    /// caller clears them); the first failure is thrown, after every result was
    /// read, and the connection left out of pipeline mode.
    func executePipelined(
        _ connection: OpaquePointer, begin: [String], statements: [(name: String, parameters: PostgresParameters)]
    ) throws(StoreError) -> [OpaquePointer] {
        guard PQenterPipelineMode(connection) == 1 else {
            for statement in begin { try execute(statement) }
            var results: [OpaquePointer] = []
            for (name, parameters) in statements {
                let result = try parameters.withPointers { values, lengths, formats throws(StoreError) in
                    PQexecPrepared(connection, name, parameters.count, values, lengths, formats, 0)
                }
                do throws(StoreError) {
                    try check(result)
                } catch {
                    PQclear(result)
                    results.forEach { PQclear($0) }
                    throw error
                }
                results.append(result!)
            }
            return results
        }
        var sent = true
        for statement in begin where sent {
            sent = PQsendQueryParams(connection, statement, 0, nil, nil, nil, nil, 0) == 1
        }
        for (name, parameters) in statements where sent {
            sent = try parameters.withPointers { values, lengths, formats throws(StoreError) in
                PQsendQueryPrepared(connection, name, parameters.count, values, lengths, formats, 0) == 1
            }
        }
        if sent { sent = PQpipelineSync(connection) == 1 }
        guard sent else { throw abandonPipeline(failure(nil)) }
        // Each query's result, then a NULL; then the sync's own result.
        var failed: StoreError?
        var results: [OpaquePointer] = []
        for index in 0..<(begin.count + statements.count) {
            let result = PQgetResult(connection)
            guard let result else {
                results.forEach { PQclear($0) }
                throw abandonPipeline(failed ?? failure(nil))
            }
            if failed == nil {
                do throws(StoreError) { try check(result) } catch { failed = error }
            }
            if index >= begin.count { results.append(result) } else { PQclear(result) }
            while let extra = PQgetResult(connection) { PQclear(extra) }
        }
        // The sync: the pipeline is idle again, and may be left.
        let sync = PQgetResult(connection)
        let synced = sync.map { PQresultStatus($0) == PGRES_PIPELINE_SYNC } ?? false
        PQclear(sync)
        guard synced, PQexitPipelineMode(connection) == 1 else {
            results.forEach { PQclear($0) }
            throw abandonPipeline(failed ?? failure(nil))
        }
        if let failed {
            results.forEach { PQclear($0) }
            throw failed
        }
        return results
    }

    /// A pipeline left half-read cannot be used again (every later call would fail
    /// as if the statement were wrong): the connection is closed, so that the pool
    /// opens another, and the transaction, which never committed, may run again.
    private func abandonPipeline(_ error: StoreError) -> StoreError {
        close()
        return StoreError(.unavailable, "database unavailable: the connection's pipeline failed (\(error.message))")
    }

    /// Runs `statements`, which do not depend on one another, and answers each one's
    /// rows: in one round trip (with the pending start of the transaction, if any).
    public func queryAll(_ statements: [SQL]) throws(StoreError) -> [[SQLRow]] {
        guard statements.count > 1 || pendingBegin != nil else {
            var rows: [[SQLRow]] = []
            for statement in statements { rows.append(try query(statement)) }
            return rows
        }
        let connection = try open()
        // Room for every statement first: the cache clears itself when full, which
        // would drop statements prepared earlier in this same call.
        try makeRoomForStatements(statements.count)
        var prepared: [(name: String, parameters: PostgresParameters)] = []
        for statement in statements {
            let rendered = statement.rendered(for: .postgresql)
            let parameters = try PostgresParameters(rendered.values)
            prepared.append((try preparedName(rendered.text, types: parameters.types), parameters))
        }
        let begin = pendingBegin ?? []
        pendingBegin = nil
        let results = try executePipelined(connection, begin: begin, statements: prepared)
        defer { results.forEach { PQclear($0) } }
        var rows: [[SQLRow]] = []
        for result in results { rows.append(try PostgresResultReader.rows(of: result)) }
        return rows
    }
}
