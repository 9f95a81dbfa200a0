import Dispatch
import Foundation
import IsletCore
import IsletServer

/// `islet`: the command line. Each subcommand parses its own flags and hands off to
/// the library; nothing here knows how Islet works inside.

let usage = """
    islet \(IsletVersion.current): a self-hosted server for iOS Live Activities.

    Usage: islet <command> [options]

    Commands:
      serve      Run the server (see `islet serve --help`).
      version    Print the version.
      help       Print this text.
    """

var arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.isEmpty ? "help" : arguments.removeFirst()

switch command {
case "serve":
    exit(await serve(arguments))
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
        application = try buildApplication(configuration)
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
        try await application.run()
        return 0
    } catch {
        Console.err("islet: \(error)")
        await application.shutdown()
        return 1
    }
}
