import Foundation
import Glibc

/// Files that only the user Islet runs as may read (mode 0600): the admin token and
/// the secrets key in the data folder, the CA `islet sim` writes. They are created
/// with that mode, never widened by the umask, and synced before they are used.
public enum PrivateFile {
    /// Why a private file could not be written; the description names the file and
    /// the system's reason, never its contents.
    public struct WriteError: Error, Sendable, CustomStringConvertible {
        /// What failed, as a sentence's end: `cannot write data/secrets.key: …`.
        public let description: String
    }

    /// Writes `text` into a new file at `path` (mode 0600) and syncs it; fails when
    /// the file exists, and leaves nothing behind when the write fails.
    public static func create(_ path: String, _ text: String) throws(WriteError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw WriteError(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
        do throws(WriteError) {
            try write(text, to: fd, path: path)
        } catch {
            unlink(path)
            throw error
        }
    }

    /// Replaces the file at `path` (or makes it) with `text`: written (0600) and
    /// synced beside it, then renamed over it, so that a crash leaves the old file
    /// or the new one, whole.
    public static func replace(_ path: String, _ text: String) throws(WriteError) {
        let temporary = path + ".new-\(getpid())"
        unlink(temporary)
        try create(temporary, text)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw WriteError(description: "cannot write \(path): \(reason)")
        }
    }

    /// Takes the group's and others' permissions off the file at `path` (a file
    /// older Islets wrote 0644); nothing when it is missing or already private.
    public static func tighten(_ path: String) {
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_mode & 0o077 != 0 else { return }
        _ = chmod(path, status.st_mode & 0o700)
    }

    /// The permission bits of `path` when others than its owner have any, else nil.
    static func openToOthers(_ path: String) -> mode_t? {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & 0o077 != 0 else { return nil }
        return status.st_mode & 0o777
    }

    private static func write(_ text: String, to fd: Int32, path: String) throws(WriteError) {
        defer { close(fd) }
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { throw WriteError(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
            offset += written
        }
        // open() asked for 0600, which the umask may narrow; make it exactly that.
        guard fchmod(fd, 0o600) == 0, fsync(fd) == 0 else {
            throw WriteError(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}
