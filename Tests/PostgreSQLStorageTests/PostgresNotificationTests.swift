import Foundation
import IsletTesting
import PostgreSQLStorage
import Storage
import Testing

@Suite("PostgreSQL notifications and lost connections", .requires(.postgres))
struct PostgresNotificationTests {
    /// A channel name no other test uses.
    private func channel() -> String { "islet_test_\(UInt32.random(in: 0...UInt32.max))" }

    @Test("a notification sent on one connection reaches the other that listens")
    func listenAndNotify() async throws {
        let listener = try PostgresConnection(url: serverURL())
        defer { listener.close() }
        let sender = try PostgresConnection(url: serverURL())
        defer { sender.close() }
        let channel = channel()
        try listener.listen(channel)
        try sender.notify(channel, payload: "first")
        try sender.notify(channel, payload: "sécond \"quoted\"")
        try sender.notify(channel + "_other", payload: "not listened to")
        var received: [PostgresNotification] = []
        let deadline = ContinuousClock.now + .seconds(30)
        while received.count < 2, ContinuousClock.now < deadline {
            received += try await runBlocking { try listener.waitForNotifications(timeout: .seconds(30)) }
        }
        #expect(received == [
            PostgresNotification(channel: channel, payload: "first"), PostgresNotification(channel: channel, payload: "sécond \"quoted\""),
        ])
        #expect(try listener.waitForNotifications(timeout: .milliseconds(20)).isEmpty)
    }

    @Test("a notification sent in a transaction comes when it commits")
    func notifyOnCommit() async throws {
        let listener = try PostgresConnection(url: serverURL())
        defer { listener.close() }
        let sender = try PostgresConnection(url: serverURL())
        defer { sender.close() }
        let channel = channel()
        try listener.listen(channel)
        try sender.execute("BEGIN")
        try sender.notify(channel, payload: "committed")
        try sender.execute("COMMIT")
        let received = try await runBlocking { try listener.waitForNotifications(timeout: .seconds(30)) }
        #expect(received == [PostgresNotification(channel: channel, payload: "committed")])
    }

    @Test("a channel name other than lowercase letters, digits and _ is refused")
    func channelNames() throws {
        let connection = try PostgresConnection(url: serverURL())
        defer { connection.close() }
        for name in ["", "Upper", "has space", "quote\"d", "semi;colon", String(repeating: "a", count: 64)] {
            #expect(throws: StoreError.self) { try connection.listen(name) }
            #expect(throws: StoreError.self) { try connection.notify(name, payload: "x") }
        }
        try connection.listen("islet_ok_123")
    }

    @Test("a backend terminated by the server makes the connection broken and its next call unavailable")
    func terminatedWhileIdle() async throws {
        let victim = try PostgresConnection(url: serverURL())
        defer { victim.close() }
        let admin = try PostgresConnection(url: serverURL())
        defer { admin.close() }
        #expect(!victim.isBroken)
        let terminated = try admin.query("SELECT pg_terminate_backend(\(Int64(victim.processID))::int) AS done")
        #expect(terminated.first?["done"] == .bool(true))
        // Usually noticed before the next call (isBroken reads what the server
        // sent); when the server's goodbye has not arrived yet, the next call is the
        // one that finds it. Either way that call is unavailable, and the
        // connection broken after it.
        _ = await eventually(within: .seconds(10)) { victim.isBroken }
        let error = #expect(throws: StoreError.self) { try victim.query("SELECT 1") }
        #expect(error?.code == .unavailable)
        #expect(error?.message.hasPrefix("database unavailable") == true)
        #expect(victim.isBroken)
    }

    @Test("a statement on a connection whose backend is gone is unavailable, and then it is broken")
    func terminatedBeforeStatement() async throws {
        let victim = try PostgresConnection(url: serverURL())
        defer { victim.close() }
        let admin = try PostgresConnection(url: serverURL())
        defer { admin.close() }
        let pid = Int64(victim.processID)
        _ = try admin.query("SELECT pg_terminate_backend(\(pid)::int)")
        #expect(try await eventually { try admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = \(pid)").isEmpty })
        let error = #expect(throws: StoreError.self) { try victim.run("SELECT \(1)") }
        #expect(error?.code == .unavailable)
        #expect(error?.message.hasPrefix("database unavailable") == true)
        #expect(victim.isBroken)
    }

    @Test("waiting for notifications on a connection that is lost throws unavailable")
    func terminatedWhileWaiting() async throws {
        let victim = try PostgresConnection(url: serverURL())
        defer { victim.close() }
        let admin = try PostgresConnection(url: serverURL())
        defer { admin.close() }
        try victim.listen(channel())
        let pid = Int64(victim.processID)
        async let waited: Result<[PostgresNotification], StoreError> = runBlocking {
            do throws(StoreError) {
                return .success(try victim.waitForNotifications(timeout: .seconds(60)))
            } catch {
                return .failure(error)
            }
        }
        _ = try admin.query("SELECT pg_terminate_backend(\(pid)::int)")
        let outcome = try await waited
        guard case .failure(let error) = outcome else {
            Issue.record("the wait answered \(outcome) instead of failing")
            return
        }
        #expect(error.code == .unavailable)
    }
}
