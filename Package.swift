// swift-tools-version: 6.0
import PackageDescription

/// Every target is compiled in the Swift 6 language mode, which turns on complete
/// strict-concurrency checking.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The transport's hot paths (HTTP/2, the APNs client, the simulator) are built in
/// release without dynamic exclusivity checks, which cost them several percent per
/// request; debug builds, and so every test run, keep the checks.
let hotPathSettings: [SwiftSetting] = swiftSettings + [
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))
]

let package = Package(
    name: "Islet",
    platforms: [.macOS(.v15), .iOS(.v17)],
    products: [
        .executable(name: "islet", targets: ["islet"]),
        .executable(name: "islet-bench", targets: ["IsletBench"]),
        // libFuzzer targets (`make fuzz`); without -DFUZZING each replays the inputs it is given.
        .executable(name: "FuzzJSON", targets: ["FuzzJSON"]),
        .executable(name: "FuzzRequestBody", targets: ["FuzzRequestBody"]),
        .executable(name: "FuzzSimulator", targets: ["FuzzSimulator"]),
        .executable(name: "FuzzHTTP2Server", targets: ["FuzzHTTP2Server"]),
        .executable(name: "FuzzAPNsClient", targets: ["FuzzAPNsClient"]),
        .executable(name: "FuzzSwiftSchema", targets: ["FuzzSwiftSchema"]),
        .executable(name: "FuzzCredentials", targets: ["FuzzCredentials"]),
        .library(name: "IsletServer", targets: ["IsletServer"]),
        // The app's half: what an iOS app adds (Foundation, and ActivityKit where it exists; nothing of the server's).
        .library(name: "IsletKit", targets: ["IsletKit"]),
    ],
    targets: [
        // IsletKit, the app's half: device registration, the outbox, what ActivityKit has against what the server
        // knows, receipts and taps. Depends on no other target, so that an app resolves none of the server's C libraries.
        .target(name: "IsletKit", swiftSettings: swiftSettings),

        // C libraries, one system module each.
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Linux system calls the Glibc module lacks (epoll, eventfd, thread names).
        .systemLibrary(name: "CLinux"),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // The project's lock and condition lock, over the C library's pthreads (so that
        // ThreadSanitizer sees them), and the waits on a given Swift `Clock`.
        .target(name: "IsletSync", swiftSettings: swiftSettings),
        // Names the threads Islet starts, as the system shows them (prctl, through CLinux).
        .target(name: "IsletThreads", dependencies: ["CLinux"], swiftSettings: swiftSettings),
        // Domain: pure Swift (Foundation and IsletSync's lock), no C library of its own, no I/O.
        .target(name: "IsletCore", dependencies: ["IsletSync"], swiftSettings: swiftSettings),
        // Background work in one shape: services that run until cancelled, a sleeper on an injected clock
        // (a manual clock in tests), a doorbell to wake them, and the runner that starts and stops them in order.
        .target(name: "IsletBackground", dependencies: ["IsletSync", "IsletCore"], swiftSettings: swiftSettings),
        // `islet schema from-swift`: a Swift tokenizer and light parser that reads ActivityAttributes types.
        .target(name: "SwiftSchemaReader", dependencies: ["IsletCore"], swiftSettings: swiftSettings),
        // Structured logs with redaction.
        .target(name: "IsletLog", dependencies: ["IsletSync", "IsletCore"], swiftSettings: swiftSettings),
        // ES256/RS256, digests and randomness over libcrypto.
        .target(name: "IsletCrypto", dependencies: ["IsletCore", "COpenSSL"], swiftSettings: swiftSettings),
        // The storage boundary, backend-neutral pure Swift: the store protocols, their records and errors. No SQL.
        .target(name: "Storage", dependencies: ["IsletCore"], swiftSettings: swiftSettings),
        // What every SQL backend shares: SQL with bound values and its dialects, the executor protocol a connection
        // implements, the store's statements written once, and the migration runner.
        .target(name: "SQLStorage", dependencies: ["Storage", "IsletCore"], swiftSettings: swiftSettings),
        // The SQLite store: connection, statements, database thread, checkpointer, Islet's schema and how it migrates.
        .target(
            name: "SQLiteStorage", dependencies: ["Storage", "SQLStorage", "IsletSync", "IsletThreads", "IsletCore", "IsletBackground", "CSQLite"], swiftSettings: swiftSettings),
        // The PostgreSQL store over libpq: connections, a pool, migrations under an advisory lock, the notice listener.
        .target(
            name: "PostgreSQLStorage", dependencies: ["Storage", "SQLStorage", "IsletSync", "IsletThreads", "IsletCore", "IsletBackground", "CPostgres"],
            swiftSettings: swiftSettings),
        // What every transport shares: header fields (case-insensitive lookup, order and repeats kept) and
        // statuses. Pure Swift; each transport re-exports it.
        .target(name: "HTTPTypes", swiftSettings: swiftSettings),
        // HTTP/2 over TLS on libnghttp2 and OpenSSL.
        .target(name: "HTTP2", dependencies: ["IsletSync", "IsletThreads", "HTTPTypes", "CNGHTTP2", "COpenSSL", "CLinux"], swiftSettings: hotPathSettings),
        // HTTP/1.1 API server over libmicrohttpd (epoll from CLinux watches its quiet streams).
        .target(name: "HTTPServer", dependencies: ["IsletSync", "IsletThreads", "HTTPTypes", "CMicroHTTPD", "CLinux"], swiftSettings: swiftSettings),
        // Outbound HTTP/1.1 and HTTP/2 over libcurl's multi interface (webhooks): one thread, kept-alive
        // connections, the address of every connection checked against private and metadata ranges.
        .target(name: "HTTPClient", dependencies: ["IsletSync", "IsletThreads", "IsletCore", "HTTPTypes", "CCurl"], swiftSettings: swiftSettings),
        // The simulators: an APNs and an FCM you can run, each an engine (the service's checks, simulated
        // devices, ActivityKit and Android's activities) behind its server, and their command lines.
        .target(name: "Simulators", dependencies: ["IsletSync", "IsletCore", "IsletCrypto", "HTTP2", "HTTPServer"], swiftSettings: hotPathSettings),
        // The APNs client: provider tokens, connection pools, one attempt per push, and the failure policy
        // that says what follows each answer (the delivery worker retries).
        .target(name: "APNs", dependencies: ["IsletSync", "IsletCore", "IsletCrypto", "HTTP2"], swiftSettings: hotPathSettings),
        // FCM's HTTP v1 API: a service account's OAuth 2.0 access tokens (RS256 assertions exchanged through
        // libcurl), data messages over HTTP/2, and the one map from FCM's answers to the transport's dispositions.
        .target(name: "FCM", dependencies: ["IsletSync", "IsletCore", "IsletCrypto", "HTTP2", "HTTPClient"], swiftSettings: swiftSettings),
        // The send queue: claims due pushes, sends them, records answers, acts on dead tokens.
        .target(
            name: "Delivery", dependencies: ["IsletSync", "IsletThreads", "IsletCore", "IsletBackground", "IsletLog", "IsletCrypto", "Storage", "APNs", "FCM"],
            swiftSettings: swiftSettings),
        // Domain services: apps and keys, devices and tokens, activity types, activities,
        // notifications. Commands in, results or domain errors out; no HTTP; the store
        // only through its protocols.
        .target(
            name: "IsletService", dependencies: ["IsletSync", "IsletCore", "IsletBackground", "IsletLog", "IsletCrypto", "Storage"],
            swiftSettings: swiftSettings),
        // The HTTP API (routes that parse, call a service and render; the dispatcher and
        // its middleware), configuration, and the application that main and tests build.
        .target(
            name: "IsletServer",
            dependencies: [
                "IsletCore", "IsletSync", "IsletBackground", "IsletLog", "IsletCrypto", "Storage", "SQLiteStorage", "PostgreSQLStorage",
                "HTTPServer", "APNs", "FCM", "Delivery", "IsletService", "HTTPClient", "IsletThreads",
            ],
            swiftSettings: swiftSettings,
            // The dashboard's page, script and style (Dashboard/Assets/), compiled in as strings.
            plugins: ["EmbedAssets"]
        ),
        // Embeds a target's .html, .js and .css files in its binary, as the constants of `EmbeddedAssets`.
        .plugin(name: "EmbedAssets", capability: .buildTool(), dependencies: ["EmbedAssetsTool"]),
        // What EmbedAssets runs at build time: writes the files as Swift string literals.
        .executableTarget(name: "EmbedAssetsTool", path: "Plugins/EmbedAssetsTool", swiftSettings: swiftSettings),
        // The thin executable: subcommands, signals, and the embedded simulator of `serve --simulator`.
        .executableTarget(
            name: "islet",
            dependencies: [
                "IsletSync", "IsletCore", "IsletServer", "IsletService", "Storage", "APNs", "Simulators", "IsletCrypto",
                "SwiftSchemaReader",
            ],
            swiftSettings: swiftSettings),

        // Benchmark helpers (`make bench`).
        .executableTarget(
            name: "IsletBench",
            dependencies: [
                "IsletSync", "APNs", "Simulators", "HTTP2", "HTTPClient", "HTTPServer", "IsletCore", "IsletCrypto", "Storage",
                "SQLiteStorage", "IsletTesting", "IsletLog", "IsletServer",
            ],
            path: "Benchmarks/IsletBench",
            swiftSettings: swiftSettings),

        // Hand-run benchmarks: `swift run -c release EngineBench`.
        .executableTarget(
            name: "EngineBench",
            dependencies: ["Simulators", "IsletCore", "IsletCrypto"],
            path: "Benchmarks/EngineBench",
            swiftSettings: swiftSettings
        ),

        // Fuzz targets: what each feeds its parser, shared by the fuzzers and the corpus replay test.
        .target(
            name: "FuzzTargets",
            dependencies: [
                "IsletSync", "IsletCore", "IsletCrypto", "IsletServer", "IsletService", "HTTPServer", "HTTP2", "APNs",
                "Simulators", "IsletLog", "Storage", "SwiftSchemaReader",
            ],
            path: "Fuzz/Targets", swiftSettings: swiftSettings),
        // libFuzzer's driver, declared for the fuzz entry points.
        .target(name: "CLibFuzzer", path: "Fuzz/CLibFuzzer"),
        // One libFuzzer entry point (or corpus replayer) per fuzz target.
        .executableTarget(name: "FuzzJSON", dependencies: ["FuzzTargets", "CLibFuzzer"], path: "Fuzz/Entry/FuzzJSON", swiftSettings: swiftSettings),
        // Request bodies through the API's routes.
        .executableTarget(name: "FuzzRequestBody", dependencies: ["FuzzTargets", "CLibFuzzer"], path: "Fuzz/Entry/FuzzRequestBody", swiftSettings: swiftSettings),
        // Push requests through the simulator's engine and payload scanner.
        .executableTarget(name: "FuzzSimulator", dependencies: ["FuzzTargets", "CLibFuzzer"], path: "Fuzz/Entry/FuzzSimulator", swiftSettings: swiftSettings),
        // Raw bytes to the HTTP/2 server after the client preface.
        .executableTarget(name: "FuzzHTTP2Server", dependencies: ["FuzzTargets", "CLibFuzzer"], path: "Fuzz/Entry/FuzzHTTP2Server", swiftSettings: swiftSettings),
        // Frames from a misbehaving server to the APNs client.
        .executableTarget(name: "FuzzAPNsClient", dependencies: ["FuzzTargets", "CLibFuzzer"], path: "Fuzz/Entry/FuzzAPNsClient", swiftSettings: swiftSettings),
        // Swift source to the schema reader.
        .executableTarget(name: "FuzzSwiftSchema", dependencies: ["FuzzTargets", "CLibFuzzer"], path: "Fuzz/Entry/FuzzSwiftSchema", swiftSettings: swiftSettings),
        // PEM keys, DER signatures, JWTs and provider tokens.
        .executableTarget(name: "FuzzCredentials", dependencies: ["FuzzTargets", "CLibFuzzer"], path: "Fuzz/Entry/FuzzCredentials", swiftSettings: swiftSettings),

        // Helpers shared by the test targets and the benchmarks: a raw-socket HTTP client,
        // temporary folders, child processes spawned without Foundation's Process.
        .target(name: "IsletTesting", dependencies: ["IsletSync", "IsletThreads", "CLinux", "Storage"], path: "Tests/IsletTesting", swiftSettings: swiftSettings),

        .testTarget(name: "IsletSyncTests", dependencies: ["IsletSync"], swiftSettings: swiftSettings),
        // IsletKit's rules alone (its backoff, its outbox against a scripted server) and the snippets of docs/isletkit.md.
        .testTarget(name: "IsletKitTests", dependencies: ["IsletKit"], swiftSettings: swiftSettings),
        .testTarget(name: "IsletThreadsTests", dependencies: ["IsletSync", "IsletThreads"], swiftSettings: swiftSettings),
        .testTarget(name: "IsletCoreTests", dependencies: ["IsletCore"], swiftSettings: swiftSettings),
        .testTarget(name: "IsletBackgroundTests", dependencies: ["IsletBackground", "IsletCore"], swiftSettings: swiftSettings),
        // The Swift schema reader on attribute files, type resolution and refused sources.
        .testTarget(name: "SwiftSchemaReaderTests", dependencies: ["SwiftSchemaReader", "IsletCore"], swiftSettings: swiftSettings),
        .testTarget(name: "IsletLogTests", dependencies: ["IsletLog"], swiftSettings: swiftSettings),
        .testTarget(name: "IsletCryptoTests", dependencies: ["IsletCrypto", "IsletTesting"], swiftSettings: swiftSettings),
        .testTarget(
            name: "StorageTests",
            dependencies: [
                "Storage", "SQLStorage", "SQLiteStorage", "PostgreSQLStorage", "IsletCore", "IsletCrypto", "IsletSync", "IsletTesting",
            ],
            swiftSettings: swiftSettings),
        // PostgreSQL connections against the server ISLET_TEST_POSTGRES_URL names (scripts/with-postgres.sh starts one).
        .testTarget(
            name: "PostgreSQLStorageTests", dependencies: ["PostgreSQLStorage", "SQLStorage", "Storage", "IsletCore", "IsletTesting"],
            swiftSettings: swiftSettings),
        .testTarget(name: "SimulatorsTests", dependencies: ["IsletSync", "Simulators", "HTTP2", "IsletTesting"], swiftSettings: swiftSettings),
        .testTarget(name: "APNsTests", dependencies: ["APNs", "Simulators", "HTTP2", "IsletTesting"], swiftSettings: swiftSettings),
        .testTarget(
            name: "FCMTests",
            dependencies: ["FCM", "Simulators", "HTTP2", "HTTPClient", "IsletCore", "IsletCrypto", "IsletSync", "IsletTesting"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "IsletServiceTests",
            dependencies: [
                "IsletService", "IsletCore", "IsletBackground", "IsletCrypto", "IsletLog", "IsletSync", "Storage", "SQLiteStorage",
                "PostgreSQLStorage", "IsletTesting",
            ],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "DeliveryTests",
            dependencies: [
                "Delivery", "APNs", "IsletCore", "IsletBackground", "IsletLog", "IsletSync", "Storage", "SQLiteStorage", "PostgreSQLStorage",
                "IsletTesting", "FCM", "Simulators", "HTTPClient", "IsletCrypto",
            ],
            swiftSettings: swiftSettings),
        .testTarget(name: "HTTP2Tests", dependencies: ["IsletSync", "HTTP2", "IsletCrypto", "IsletTesting"], swiftSettings: swiftSettings),
        .testTarget(name: "HTTPServerTests", dependencies: ["IsletSync", "HTTPServer", "IsletTesting"], swiftSettings: swiftSettings),
        // The outbound client against a local HTTPServer receiver (bodies, headers, reuse, timeouts, refused
        // addresses) and an HTTP/2 server over TLS.
        .testTarget(
            name: "HTTPClientTests",
            dependencies: ["HTTPClient", "IsletCore", "HTTPServer", "IsletTesting", "IsletSync", "HTTP2", "IsletCrypto"],
            swiftSettings: swiftSettings),
        // Replays every fuzz corpus entry (crash reproducers included) through its target.
        .testTarget(name: "FuzzReplayTests", dependencies: ["FuzzTargets"], path: "Fuzz/ReplayTests", swiftSettings: swiftSettings),
        .testTarget(
            name: "IsletServerTests",
            dependencies: [
                "IsletSync", "IsletServer", "islet", "IsletTesting", "HTTP2", "HTTPClient", "HTTPServer", "IsletCrypto", "Simulators", "Delivery",
                // IsletKit against a real Islet and its simulator, end to end.
                "IsletKit",
                // Databases written as an older Islet wrote them, and read raw.
                "Storage", "SQLiteStorage", "PostgreSQLStorage",
            ],
            swiftSettings: swiftSettings),
    ]
)

/// The sanitizer builds (`scripts/test-sanitize.sh` sets `ISLET_SANITIZER_SCOPE` to
/// `address` or `thread`, in a build folder of their own) hold the tests where that
/// sanitizer's errors live. Both: the lock and thread names, the stores' threads
/// (SQLite's group commit and checkpointer, libpq's pool and notice listener), HTTP/2
/// and TLS, the HTTP server and client, the APNs client and simulator, the delivery
/// worker, and of the API's suites those that run a whole server's life, its loops and
/// its simulators. AddressSanitizer alone: the domain's JSON reader (unsafe buffers),
/// every store contract (values through SQLite's and libpq's C calls), libcrypto and
/// every fuzz target's corpus, replayed. ThreadSanitizer reads no more of the pure
/// Swift modules (the domain, the background shape, the services): they hold no
/// `@unchecked Sendable` and no `nonisolated(unsafe)`, so the compiler's own
/// strict-concurrency checking proves them free of data races, and their shared state
/// is IsletSync's lock, whose own suite runs. Suites that only drive HTTP, pure parsers
/// and the command lines are left to `make test`; the fuzz targets' libFuzzer builds
/// are `make fuzz`'s, and the benchmarks have none.
if let scope = Context.environment["ISLET_SANITIZER_SCOPE"] {
    let both: Set<String> = [
        "IsletSyncTests", "IsletThreadsTests", "StorageTests", "PostgreSQLStorageTests", "HTTP2Tests", "HTTPServerTests",
        "HTTPClientTests", "APNsTests", "SimulatorsTests", "DeliveryTests", "IsletServerTests",
    ]
    let addressOnly: Set<String> = ["IsletCoreTests", "IsletCryptoTests", "FuzzReplayTests"]
    let threadOnly: Set<String> = []
    let sanitizedTests: Set<String>
    switch scope {
    case "address": sanitizedTests = both.union(addressOnly)
    case "thread": sanitizedTests = both.union(threadOnly)
    default: fatalError("ISLET_SANITIZER_SCOPE is address or thread, not \(scope)")
    }
    let serverSuites = [
        "ServerHarness.swift", "ApplicationTests.swift", "RequestAdmissionTests.swift", "ThreadCensusTests.swift",
        "EventsAPITests.swift", "TwoNodeApplicationTests.swift", "DeadTokenTests.swift", "ActivityLifeTests.swift",
    ]
    let unsanitized: Set<String> = ["IsletBench", "EngineBench", "CLibFuzzer"]
    // The fuzz targets' module, where their corpora are replayed.
    let replayed: Set<String> = sanitizedTests.contains("FuzzReplayTests") ? ["FuzzTargets", "FuzzReplayTests"] : []
    package.targets.removeAll { target in
        (target.type == .test && !sanitizedTests.contains(target.name)) || unsanitized.contains(target.name)
            || (target.name.hasPrefix("Fuzz") && !replayed.contains(target.name))
    }
    package.products.removeAll { $0.name != "islet" && $0.name != "IsletServer" }
    package.targets.first { $0.name == "IsletServerTests" }?.sources = serverSuites
    if scope == "thread" {
        // Of the stores' suites, those whose work runs on several threads at once.
        package.targets.first { $0.name == "StorageTests" }?.sources = [
            "GroupCommitTests.swift", "SQLiteTests.swift", "CheckpointerTests.swift", "NoticeListenerTests.swift",
            "PostgresBusyRetryTests.swift", "PostgreSQLSharingTests.swift", "Contract/StoreBackend.swift",
            "Contract/AppDeviceContractTests.swift",
        ]
    }
}
