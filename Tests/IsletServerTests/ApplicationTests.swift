import Foundation
import IsletCore
import IsletLog
import IsletServer
import SQLiteStorage
import IsletTesting
import Testing

/// Builds an application on port 0 in a temporary folder, runs `body`, shuts down.
func withApplication(
    maxBodyBytes: Int = 65_536,
    _ body: (Application, MemoryLogSink) async throws -> Void
) async throws {
    try await withTemporaryDirectory { dir in
        try await TestPostgres.withSuiteDatabase { database in
            var config = Configuration()
            config.port = 0
            config.dataDirectory = dir.path
            config.databasePath = database
            config.secretsKey = database.map { _ in TestPostgres.secretsKey }
            config.maxBodyBytes = maxBodyBytes
            let sink = MemoryLogSink()
            let application = try buildApplication(config, logger: Logger(level: .debug, format: .json, sink: sink))
            try application.start()
            do {
                try await body(application, sink)
            } catch {
                await application.shutdown()
                throw error
            }
            await application.shutdown()
        }
    }
}

@Suite("Application over HTTP")
struct ApplicationTests {
    @Test func healthzAnswersJSON() async throws {
        try await withApplication { app, _ in
            let response = try await httpRequest(port: app.port, path: "/healthz")
            #expect(response.status == 200)
            #expect(response.headers["content-type"] == "application/json")
            #expect(response.json?["status"] as? String == "ok")
            #expect((response.json?["checks"] as? [String: String])?["database"] == "ok")
            #expect(response.json?["backend"] as? String == app.store.backend)
            #expect(response.json?["node_id"] as? String == app.configuration.resolvedNodeID)
        }
    }

    @Test func versionListsIsletAndEveryLinkedLibrary() async throws {
        try await withApplication { app, _ in
            let response = try await httpRequest(port: app.port, path: "/v1/version")
            let json = try #require(response.json)
            #expect(json["name"] as? String == "islet")
            #expect(json["schema_version"] as? Int == IsletSchema.migrations.last?.version)
            let libraries = try #require(json["libraries"] as? [String: String])
            #expect(Set(libraries.keys) == ["openssl", "nghttp2", "libmicrohttpd", "sqlite", "libpq"])
        }
    }

    @Test func unknownRoutesAndMethodsAreProblems() async throws {
        try await withApplication { app, _ in
            let missing = try await httpRequest(port: app.port, path: "/v1/nope")
            #expect(missing.status == 404)
            #expect(missing.headers["content-type"] == "application/problem+json")
            #expect(missing.json?["status"] as? Int == 404)
            #expect(missing.json?["title"] as? String == "Not Found")
            let wrong = try await httpRequest(port: app.port, method: "DELETE", path: "/healthz")
            #expect(wrong.status == 405)
            #expect(wrong.headers["allow"] == "GET, HEAD")
        }
    }

    @Test func oversizedBodyIsA413Problem() async throws {
        try await withApplication(maxBodyBytes: 1_000) { app, _ in
            let response = try await httpRequest(port: app.port, method: "POST", path: "/dashboard/session", body: Data(count: 1_001))
            #expect(response.status == 413)
            #expect(response.headers["content-type"] == "application/problem+json")
            #expect(response.json?["detail"] as? String == "The request body is larger than 1000 bytes.")
        }
    }

    @Test func eachRequestIsLoggedWithItsRoutePattern() async throws {
        try await withApplication { app, sink in
            _ = try await httpRequest(port: app.port, path: "/healthz")
            let line = try #require(sink.lines.first { $0.contains("\"msg\":\"request\"") })
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["route"] as? String == "/healthz")
            #expect(object["status"] as? Int == 200)
        }
    }
}

@Suite("The embedded simulators come from the caller")
struct EmbeddedSimulatorsTests {
    @Test func theSimulatorWithoutAFactoryStopsWithOneClearError() async {
        await withTemporaryDirectory { dir in
            var config = Configuration()
            config.port = 0
            config.dataDirectory = dir.path
            config.simulator = true
            do throws(ConfigurationError) {
                _ = try buildApplication(config, logger: Logger(level: .error, format: .json, sink: MemoryLogSink()))
                Issue.record("an application with --simulator and no embedded APNs was built")
            } catch {
                #expect(error.setting == "--simulator (ISLET_SIMULATOR)")
                #expect("\(error)".contains("no embedded simulator"))
            }
        }
    }
}
