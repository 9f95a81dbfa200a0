import APNs
import Dispatch
import Foundation
import IsletCore
import IsletCrypto
import IsletServer
import Simulators
import SwiftSchemaReader

/// `islet`: the command line. Each subcommand parses its own flags and hands off to
/// the library; nothing here knows how Islet works inside.

let usage = """
    islet \(IsletVersion.current): a self-hosted server for iOS Live Activities.

    Usage: islet <command> [options]

    Commands:
      serve      Run the server (see `islet serve --help`).
      sim        Run a local APNs simulator, or with --fcm a local FCM for Android
                 (see `islet sim --help`).
      send       Build and send one push, print the request and APNs's answer
                 (see `islet send --help`).
      channels   Create, list, read or delete the app's iOS 18 broadcast channels at APNs
                 (see `islet channels --help`).
      jwt        Print an APNs provider token: --key FILE.p8 --key-id ID --team-id ID
      schema     from-swift FILE.swift [--type NAME]: print the activity type schema of
                 the app's ActivityAttributes type, ready for PUT .../activity-types/NAME
      secrets    generate: print a new secrets key; rotate --new-key-file FILE: seal the
                 database's credentials under it (see `islet secrets --help`)
      version    Print the version.
      help       Print this text.
    """

var arguments = Array(CommandLine.arguments.dropFirst())
guard !arguments.isEmpty else {
    // No command: the usage goes where errors go, and the status says it failed.
    Console.err(usage)
    exit(2)
}
let command = arguments.removeFirst()

switch command {
case "serve":
    exit(await serve(arguments))
case "sim":
    exit(await simulate(arguments))
case "send":
    exit(await sendPush(arguments))
case "channels":
    exit(await manageChannels(arguments))
case "jwt":
    exit(providerToken(arguments))
case "schema":
    exit(schemaCommand(arguments))
case "secrets":
    exit(secretsCommand(arguments))
case "version", "--version":
    Console.out("islet \(IsletVersion.current)")
case "help", "--help", "-h":
    Console.out(usage)
default:
    Console.err("islet: unknown command \"\(command)\"\n\n\(usage)")
    exit(2)
}

/// Runs the server until SIGTERM or SIGINT; answers the exit status.
func serve(_ arguments: [String]) async -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        Console.out(Configuration.helpText)
        return 0
    }
    let configuration: Configuration
    let application: Application
    do {
        let loaded = try Configuration.load(arguments: arguments, environment: ProcessInfo.processInfo.environment)
        configuration = loaded.configuration
        application = try buildApplication(configuration, embeddedSimulators: EmbeddedSimulator.factory)
        for warning in loaded.warnings { application.logger.warning(warning) }
    } catch {
        Console.err("islet: \(error)")
        return 2
    }
    let signals = SignalWatcher(signals: [SIGTERM, SIGINT]) { name in
        application.requestShutdown(reason: name)
    }
    defer { signals.cancel() }
    do {
        let port = try application.start()
        // Whatever the log level: with --port 0 this is the only place the port shows.
        Console.out("islet: listening on \(application.url(port: port))")
        if let token = application.generatedAdminToken {
            Console.out("Admin token (generated once, kept in \(configuration.adminTokenPath)): \(token)")
        }
        if let demo = application.demo {
            Console.out(Walkthrough.text(application: application, demo: demo))
        }
        try await application.run()
        return 0
    } catch {
        Console.err("islet: \(error)")
        await application.shutdown()
        return 1
    }
}

/// Runs the APNs simulator (or with `--fcm` the FCM simulator) until SIGTERM or
/// SIGINT; answers the exit status.
func simulate(_ arguments: [String]) async -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        Console.out(SimulatorCommandLine.helpText + "\n\n" + FCMSimulatorCommandLine.helpText)
        return 0
    }
    if arguments.contains(where: { $0 == "--fcm" || $0.hasPrefix("--fcm=") }) {
        return await simulateFCM(arguments)
    }
    let quiet = arguments.contains("--quiet")
    let commandLine: SimulatorCommandLine
    let simulator: APNsSimulator
    let console = BufferedConsole()
    defer { console.close() }
    var observer: (@Sendable (PushRecord) -> Void)?
    if !quiet {
        observer = { record in console.line(record.summaryLine) }
    }
    do throws(any Error) {
        commandLine = try SimulatorCommandLine.parse(arguments.filter { $0 != "--quiet" })
        simulator = try APNsSimulator(options: commandLine.options, observer: observer)
        if let ca = simulator.caCertificatePEM {
            try PrivateFile.replace(commandLine.caOutputPath, ca)
        }
        let ports = try simulator.start()
        for warning in commandLine.warnings { Console.err(warning) }
        Console.out(commandLine.banner(
            apnsPort: ports.apns, inspectPort: ports.inspect, channelsPort: simulator.channelsPort,
            wroteCA: simulator.caCertificatePEM != nil))
    } catch {
        Console.err("islet: \(error)")
        return 2
    }
    await untilStopped()
    await simulator.shutdown()
    return 0
}

/// Returns at SIGTERM or SIGINT, saying so.
func untilStopped() async {
    let stopped = AsyncStream<String>.makeStream()
    let signals = SignalWatcher(signals: [SIGTERM, SIGINT]) { name in stopped.continuation.yield(name) }
    defer { signals.cancel() }
    for await name in stopped.stream {
        Console.out("islet sim: \(name), stopping")
        break
    }
}

/// Runs the FCM simulator until SIGTERM or SIGINT: writes its CA and a service
/// account it trusts, prints where everything is, and a line per message unless
/// `--quiet`. Answers the exit status.
func simulateFCM(_ arguments: [String]) async -> Int32 {
    let commandLine: FCMSimulatorCommandLine
    do {
        commandLine = try FCMSimulatorCommandLine.parse(arguments)
    } catch {
        Console.err("islet: \(error)")
        return 2
    }
    let console = BufferedConsole()
    defer { console.close() }
    var observer: (@Sendable (FCMRecord) -> Void)?
    if !commandLine.quiet {
        observer = { record in console.line(record.summaryLine) }
    }
    let simulator: FCMSimulator
    do {
        simulator = try FCMSimulator(port: commandLine.port, http1Port: commandLine.http1Port, observer: observer)
    } catch {
        Console.err("islet: \(error)")
        return 2
    }
    do throws(any Error) {
        try simulator.start()
        if let ca = simulator.caCertificatePEM {
            try PrivateFile.replace(commandLine.caOutputPath, ca)
        }
        // For Islet (`--fcm-url`, `--fcm-ca-file`, `--fcm-allow-private`): its token URI is the HTTP/2 and TLS
        // one (an app's service account must name an https token URI). Google's SDKs
        // post to the HTTP/1.1 port's /token instead.
        let account = try simulator.makeServiceAccount(projectID: commandLine.projectID)
        try PrivateFile.replace(commandLine.accountOutputPath, account.jsonText + "\n")
        Console.out(commandLine.banner(url: simulator.url, http1URL: simulator.http1URL))
    } catch {
        Console.err("islet: \(error)")
        await simulator.shutdown()
        return 2
    }
    await untilStopped()
    await simulator.shutdown()
    return 0
}

/// `islet schema from-swift FILE [--type NAME]`: reads the app's `ActivityAttributes`
/// type from Swift source and prints its schema as JSON. Exit 0 on success, 1 when
/// the file has types the schema cannot express (each named), 2 for bad usage.
func schemaCommand(_ arguments: [String]) -> Int32 {
    let usage = "usage: islet schema from-swift FILE.swift [--type NAME]"
    if arguments.contains("--help") || arguments.contains("-h") {
        Console.out("""
            Usage: islet schema from-swift FILE.swift [--type NAME]

            Reads the app's ActivityAttributes type (and its ContentState) from Swift source
            and prints its schema as JSON, ready for PUT /v1/apps/{app_id}/activity-types/NAME.
            --type NAME picks the type when the file declares several.

            Exit status: 0 printed, 1 the file has properties a schema cannot express (each
            named), 2 bad usage or an unreadable file.
            """)
        return 0
    }
    guard arguments.first == "from-swift", arguments.count >= 2 else {
        Console.err("islet: \(usage)")
        return 2
    }
    let path = arguments[1]
    var typeName: String?
    var rest = Array(arguments.dropFirst(2))
    while !rest.isEmpty {
        let flag = rest.removeFirst()
        guard flag == "--type", !rest.isEmpty else {
            Console.err("islet: \(usage)")
            return 2
        }
        typeName = rest.removeFirst()
    }
    guard let data = FileManager.default.contents(atPath: path) else {
        Console.err("islet: cannot read \(path)")
        return 2
    }
    do {
        let schema = try SwiftSchemaReader.schema(fromSwift: String(decoding: data, as: UTF8.self), typeName: typeName)
        let object = try JSONSerialization.jsonObject(with: Data(schema.jsonText.utf8))
        let pretty = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        Console.out(String(decoding: pretty, as: UTF8.self))
        return 0
    } catch let error as SwiftSchemaError {
        Console.err("islet: no schema made from \(path): \(error.code.summary):")
        for problem in error.problems { Console.err("  \(problem)") }
        return 1
    } catch {
        Console.err("islet: \(error)")
        return 1
    }
}

/// Prints a provider token (ES256 JWT) for an APNs signing key.
func providerToken(_ arguments: [String]) -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        Console.out("""
            Usage: islet jwt --key FILE.p8 --key-id ID --team-id ID [--issued-at UNIX_SECONDS]

            Prints an APNs provider token: an ES256 JSON Web Token signed with the .p8 key,
            with kid (the key id), iss (the team id) and iat (now, or --issued-at). APNs
            accepts it for an hour.
            """)
        return 0
    }
    var values: [String: String] = [:]
    var index = 0
    while index < arguments.count {
        let flag = arguments[index]
        guard ["--key", "--key-id", "--team-id", "--issued-at"].contains(flag), index + 1 < arguments.count else {
            Console.err("islet: usage: islet jwt --key FILE.p8 --key-id ID --team-id ID [--issued-at UNIX_SECONDS]")
            return 2
        }
        values[flag] = arguments[index + 1]
        index += 2
    }
    guard let keyPath = values["--key"], let keyID = values["--key-id"], let teamID = values["--team-id"] else {
        Console.err("islet: islet jwt needs --key, --key-id and --team-id")
        return 2
    }
    do {
        guard let pem = FileManager.default.contents(atPath: keyPath) else {
            throw ConfigurationError(.unusable, setting: "--key", message: "cannot read \(keyPath)")
        }
        let key = try P256.SigningKey(pemRepresentation: String(decoding: pem, as: UTF8.self))
        let issuedAt = values["--issued-at"].flatMap(Int64.init) ?? Int64(SystemWallClock().now().timeIntervalSince1970)
        Console.out(try JSONWebToken.signES256(keyID: keyID, claims: ["iss": .string(teamID), "iat": .integer(issuedAt)], key: key))
        return 0
    } catch {
        Console.err("islet: \(error)")
        return 2
    }
}

/// Creates, lists, reads or deletes the app's broadcast channels at APNs. Exit
/// status: 0 done, 1 APNs refused, 2 a bad flag, 3 APNs could not be reached.
func manageChannels(_ arguments: [String]) async -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        Console.out(ChannelsCommandLine.helpText)
        return 0
    }
    let command: ChannelsCommandLine
    do {
        command = try ChannelsCommandLine.parse(arguments)
    } catch {
        Console.err("islet: \(error)")
        return 2
    }
    let (status, lines) = await command.run()
    for line in lines { status == 0 ? Console.out(line) : Console.err(line) }
    return status
}

/// Sends one push and prints the exchange. Exit status (`SendOutcome`): 0 APNs
/// accepted it, 1 APNs refused it, 2 it was never sent (a bad flag or a broken
/// payload rule), 3 APNs could not be reached.
func sendPush(_ arguments: [String]) async -> Int32 {
    if arguments.contains("--help") || arguments.contains("-h") {
        Console.out(SendCommandLine.helpText)
        return 0
    }
    let command: SendCommandLine
    do {
        command = try SendCommandLine.parse(arguments, now: SystemWallClock().now())
    } catch {
        Console.err("islet: \(error)")
        return SendOutcome.notSent
    }
    Console.out(command.requestDescription)
    let client = APNsClient(configuration: command.client)
    let result = await client.send(command.request, key: command.key, environment: command.environment)
    await client.shutdown()
    let outcome = SendOutcome(result, url: command.client.url(for: command.environment))
    Console.out("")
    for line in outcome.lines { Console.out(line) }
    return outcome.status
}
