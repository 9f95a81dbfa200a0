import Foundation
public import IsletCore
import PostgreSQLStorage

// What the values mean for a start, worked out without touching the machine.
extension Configuration {
    /// The database actually used: the SQLite file, or the PostgreSQL URL.
    public var resolvedDatabasePath: String {
        databasePath ?? (dataDirectory as NSString).appendingPathComponent("islet.sqlite")
    }

    /// The PostgreSQL URL, when the database is one.
    public var postgresURL: String? {
        guard let databasePath, PostgresURL.isPostgresURL(databasePath) else { return nil }
        return databasePath
    }

    /// The lifecycle windows configured.
    public var lifecycleWindows: LifecycleWindows {
        LifecycleWindows(update: updateWindowHours * 3600, end: endWindowHours * 3600)
    }

    /// Whether the public URL is `https`: the dashboard's cookie is then `Secure`
    /// whatever the request says.
    public var publicURLIsHTTPS: Bool {
        publicURL?.lowercased().hasPrefix("https://") ?? false
    }

    /// Where a generated admin token is kept.
    public var adminTokenPath: String {
        (dataDirectory as NSString).appendingPathComponent("admin-token")
    }

    /// Where the secrets key of an SQLite database is kept when none is given.
    public var secretsKeyPath: String {
        (dataDirectory as NSString).appendingPathComponent("secrets.key")
    }

    /// This node's id when none is given: the host name and the API's port, or the
    /// process id when the port is picked at start (and so not yet known).
    static func defaultNodeID(hostName: String, port: Int, processID: Int32) -> String {
        port == 0 ? "\(hostName):pid\(processID)" : "\(hostName):\(port)"
    }

    /// A folder a start needs, and the setting that names it.
    struct RequiredFolder: Equatable, Sendable {
        /// The folder.
        var path: String
        /// The setting that names it, as errors show it: `--data-dir (ISLET_DATA_DIR)`.
        var setting: String
        /// Whether Islet writes into it itself (the data folder), rather than only
        /// its database does.
        var mustBeWritable: Bool
    }

    /// The folders a start needs, made in this order: the data folder, then the
    /// SQLite database's folder when it is another (none for PostgreSQL, or a
    /// database in the current folder).
    var requiredFolders: [RequiredFolder] {
        var folders = [RequiredFolder(path: dataDirectory, setting: Self.label(of: \.dataDirectory), mustBeWritable: true)]
        let parent = (resolvedDatabasePath as NSString).deletingLastPathComponent
        if postgresURL == nil, !parent.isEmpty, parent != dataDirectory {
            folders.append(RequiredFolder(path: parent, setting: Self.label(of: \.databasePath), mustBeWritable: false))
        }
        return folders
    }
}
