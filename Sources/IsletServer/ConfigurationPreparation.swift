import Foundation
public import IsletCore

// What a start asks of the machine: its host name, and the folders the
// configuration names, checked and created. The decisions are made in
// ConfigurationResolution.swift; this file only carries them out.
extension Configuration {
    /// This node's id: the one given, else the host name and the API's port (the
    /// process id when the port is picked at start).
    public var resolvedNodeID: String {
        nodeID ?? Self.defaultNodeID(hostName: Self.hostName(), port: port, processID: getpid())
    }

    /// The kernel's host name, without asking a name server for a longer one;
    /// `islet` when it cannot be read.
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "islet" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Checks what the values point at, then makes the ``requiredFolders``: each is
    /// a folder or missing, the data folder ends up writable, and an SQLite
    /// database path is not a folder. Answers the folders it created, deepest
    /// first, so that a start that fails later can remove them again; when it
    /// fails itself, it removes what it created.
    @discardableResult
    public func prepareFilesystem() throws(ConfigurationError) -> [String] {
        let files = FileManager.default
        let folders = requiredFolders
        var isDirectory: ObjCBool = false
        for folder in folders where files.fileExists(atPath: folder.path, isDirectory: &isDirectory) && !isDirectory.boolValue {
            throw ConfigurationError(.unusable, setting: folder.setting, message: "\(folder.path) exists and is not a folder")
        }
        let database = resolvedDatabasePath
        if postgresURL == nil, files.fileExists(atPath: database, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ConfigurationError(
                .unusable, setting: Self.label(of: \.databasePath), message: "\(database) is a folder, not a database file")
        }
        var created: [String] = []
        do throws(ConfigurationError) {
            for folder in folders {
                created = try Self.makeFolder(folder.path, setting: folder.setting) + created
                if folder.mustBeWritable, !files.isWritableFile(atPath: folder.path) {
                    throw ConfigurationError(.unusable, setting: folder.setting, message: "\(folder.path) is not writable")
                }
            }
        } catch {
            Self.removeFolders(created)
            throw error
        }
        return created
    }

    /// Creates `path` and its missing parents; answers those it created, deepest first.
    private static func makeFolder(_ path: String, setting: String) throws(ConfigurationError) -> [String] {
        let files = FileManager.default
        var missing: [String] = []
        var isDirectory: ObjCBool = false
        var current = (path as NSString).standardizingPath
        while !current.isEmpty && current != "/" && !files.fileExists(atPath: current, isDirectory: &isDirectory) {
            missing.append(current)
            current = (current as NSString).deletingLastPathComponent
        }
        if !current.isEmpty, files.fileExists(atPath: current, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw ConfigurationError(.unusable, setting: setting, message: "cannot create \(path): \(current) is not a folder")
        }
        guard !missing.isEmpty else { return [] }
        do {
            // Readable by Islet's user only: it holds the database and the keys.
            try files.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            removeFolders(missing)
            throw ConfigurationError(.unusable, setting: setting, message: "cannot create \(path): \(reason(error))")
        }
        return missing
    }

    /// Removes folders a failed start created, deepest first, each only if it is
    /// still empty.
    public static func removeFolders(_ folders: [String]) {
        for folder in folders { _ = rmdir(folder) }
    }

    /// Why a file operation failed, as the system says it.
    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain, let code = POSIXErrorCode(rawValue: Int32(underlying.code))
        {
            return String(describing: POSIXError(code).localizedDescription)
        }
        return nsError.localizedDescription
    }
}
