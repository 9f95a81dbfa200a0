internal import CPostgres
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
        try execute("COMMIT")
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
    /// when there is one, in one pipeline: the start's statements, the statement, a
    /// sync; then reads every result in order. Answers the statement's result (the
    /// caller clears it).
    func executePipelined(
        _ connection: OpaquePointer, begin: [String], name: String, _ parameters: PostgresParameters
    ) throws(StoreError) -> OpaquePointer {
        guard PQenterPipelineMode(connection) == 1 else {
            for statement in begin { try execute(statement) }
            let result = try parameters.withPointers { values, lengths, formats throws(StoreError) in
                PQexecPrepared(connection, name, parameters.count, values, lengths, formats, 0)
            }
            guard let result else { throw failure(nil) }
            return result
        }
        var sent = true
        for statement in begin where sent {
            sent = PQsendQueryParams(connection, statement, 0, nil, nil, nil, nil, 0) == 1
        }
        if sent {
            sent = try parameters.withPointers { values, lengths, formats throws(StoreError) in
                PQsendQueryPrepared(connection, name, parameters.count, values, lengths, formats, 0) == 1
            }
        }
        if sent { sent = PQpipelineSync(connection) == 1 }
        guard sent else { throw failure(nil) }
        // Each query's result, then a NULL; then the sync's own result.
        var failed: StoreError?
        for _ in begin {
            let result = PQgetResult(connection)
            if failed == nil {
                do throws(StoreError) { try check(result) } catch { failed = error }
            }
            PQclear(result)
            guard result != nil else { throw failed ?? failure(nil) }
            while let extra = PQgetResult(connection) { PQclear(extra) }
        }
        let statement = PQgetResult(connection)
        guard let statement else { throw failed ?? failure(nil) }
        while let extra = PQgetResult(connection) { PQclear(extra) }
        // The sync: the pipeline is idle again, and may be left.
        let sync = PQgetResult(connection)
        let synced = sync.map { PQresultStatus($0) == PGRES_PIPELINE_SYNC } ?? false
        PQclear(sync)
        guard synced, PQexitPipelineMode(connection) == 1 else {
            PQclear(statement)
            throw failed ?? failure(nil)
        }
        if let failed {
            PQclear(statement)
            throw failed
        }
        return statement
    }
}
