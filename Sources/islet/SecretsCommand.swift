import Foundation
import IsletCore
import IsletCrypto
import IsletServer

/// `islet secrets generate` prints a new secrets key; `islet secrets rotate
/// --new-key-file FILE` seals the database's credentials again under the key in FILE.
/// Exit status: 0 done, 1 the rotation failed, 2 bad usage or settings.
func secretsCommand(_ arguments: [String]) -> Int32 {
    let usage = """
        Usage: islet secrets generate
               islet secrets rotate --new-key-file FILE [serve's settings]

        The secrets key seals the APNs private keys and webhook secrets in the database
        (AES-256-GCM): 32 random bytes in base64, given to islet serve in
        ISLET_SECRETS_KEY or in a file named by --secrets-key-file. On SQLite without
        one, the first start generates <data-dir>/secrets.key; PostgreSQL needs one.

          generate   Print a new key.
          rotate     Seal every credential again under the key in FILE, in one
                     transaction. The database and the current key are found as
                     islet serve finds them (--data-dir, --database, ISLET_SECRETS_KEY,
                     --secrets-key-file, <data-dir>/secrets.key). Stop the nodes first
                     (it refuses while one runs on the database), and start them with
                     the new key: the old one no longer opens the database. A
                     <data-dir>/secrets.key in use is replaced by the new key.
        """
    if arguments.isEmpty || arguments.contains("--help") || arguments.contains("-h") {
        if arguments.isEmpty {
            Console.err(usage)
            return 2
        }
        Console.out(usage)
        return 0
    }
    switch arguments[0] {
    case "generate" where arguments.count == 1:
        do {
            Console.out(try SecretsKey.generate().base64)
            return 0
        } catch {
            Console.err("islet: \(error)")
            return 1
        }
    case "rotate":
        var rest: [String] = []
        var newKeyFile: String?
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument.hasPrefix("--new-key-file=") {
                newKeyFile = String(argument.dropFirst("--new-key-file=".count))
            } else if argument == "--new-key-file", index < arguments.count {
                newKeyFile = arguments[index]
                index += 1
            } else {
                rest.append(argument)
            }
        }
        guard let newKeyFile, !newKeyFile.isEmpty else {
            Console.err("islet: islet secrets rotate needs --new-key-file FILE (make the key with `islet secrets generate`)")
            return 2
        }
        let configuration: Configuration
        do {
            configuration = try Configuration.load(arguments: rest, environment: ProcessInfo.processInfo.environment).configuration
        } catch {
            Console.err("islet: \(error)")
            return 2
        }
        do {
            let rotation = try rotateSecretsKey(configuration, newKeyFile: newKeyFile, now: SystemWallClock().now())
            Console.out("islet: \(rotation.resealed) credential(s) sealed under the new key.")
            if let file = rotation.replacedKeyFile {
                Console.out("The new key replaced the one in \(file).")
            } else {
                Console.out("Start every node with the new key (ISLET_SECRETS_KEY or --secrets-key-file): the old one no longer opens the database.")
            }
            return 0
        } catch {
            Console.err("islet: \(error)")
            return 1
        }
    default:
        Console.err("islet: unknown secrets command \"\(arguments.joined(separator: " "))\"\n\n\(usage)")
        return 2
    }
}
