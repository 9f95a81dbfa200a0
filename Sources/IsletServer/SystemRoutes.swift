import HTTP2
import HTTPServer
import IsletCore
import IsletCrypto
import Storage

/// `GET /healthz` and `GET /v1/version`: what a load balancer and an operator ask
/// first.
struct SystemRoutes: Sendable {
    let database: SQLiteDatabase

    struct Health: Encodable {
        let status: String
        let checks: [String: String]
    }

    struct Version: Encodable {
        let name: String
        let version: String
        let schemaVersion: Int
        let libraries: [String: String]

        enum CodingKeys: String, CodingKey {
            case name, version, libraries
            case schemaVersion = "schema_version"
        }
    }

    func register(in router: inout Router) {
        router.add("GET", "/healthz") { _, _ in health() }
        router.add("GET", "/v1/version") { _, _ in version() }
    }

    func health() -> HTTPResponse {
        do {
            _ = try database.withConnection { try $0.query("SELECT 1").count }
            return jsonResponse(Health(status: "ok", checks: ["database": "ok"]))
        } catch {
            return jsonResponse(status: 503, Health(status: "unavailable", checks: ["database": "\(error)"]))
        }
    }

    func version() -> HTTPResponse {
        let schema = (try? database.withConnection { try Migrator.currentVersion($0) }) ?? 0
        return jsonResponse(Version(
            name: "islet",
            version: IsletVersion.current,
            schemaVersion: schema,
            libraries: [
                "openssl": CryptoLibrary.version,
                "nghttp2": HTTP2Library.version,
                "libmicrohttpd": HTTPServer.libraryVersion,
                "sqlite": SQLiteConnection.libraryVersion,
                "libpq": PostgresLibrary.version,
            ]))
    }
}
