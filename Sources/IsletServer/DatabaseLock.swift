import Foundation
import Glibc
import IsletSync

/// The lock file beside an SQLite database (`<database>.lock`, mode 0600): a node
/// holds it shared for as long as it runs on the database, and
/// `islet secrets rotate` holds it exclusively while it seals the credentials again,
/// so that neither runs while the other does. An flock(2) lock on a file of its own,
/// never on the database file: closing another descriptor of the database would drop
/// SQLite's own (fcntl) locks. The system releases it when the descriptor closes or
/// the process ends, however it ends: a crashed node leaves nothing held.
final class DatabaseLock: Sendable {
    /// The open lock file, until released.
    private let descriptor: Lock<Int32?>

    private init(descriptor: Int32) {
        self.descriptor = Lock(descriptor)
    }

    deinit { release() }

    /// The lock file of the database at `database`.
    static func path(database: String) -> String { database + ".lock" }

    /// Why a lock could not be taken: another holds it (`held`), or the file could
    /// not be opened.
    struct Failure: Error {
        /// Whether another process (or another holder in this one) has it.
        let held: Bool
        /// What happened, as the end of a sentence.
        let message: String
    }

    /// Takes the lock of the database at `database`, shared or exclusive, without
    /// waiting.
    static func take(database: String, exclusive: Bool) throws(Failure) -> DatabaseLock {
        let path = path(database: database)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(held: false, message: "cannot open \(path): \(String(cString: strerror(errno)))") }
        // A file an older start made before the umask was considered, or one whose
        // mode was changed: its user's only, as every file of the data folder.
        _ = fchmod(fd, 0o600)
        guard flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { throw Failure(held: true, message: "\(path) is held") }
            throw Failure(held: false, message: "cannot lock \(path): \(String(cString: strerror(code)))")
        }
        return DatabaseLock(descriptor: fd)
    }

    /// Lets the lock go (once; later calls do nothing).
    func release() {
        guard let fd = descriptor.withLock({ held -> Int32? in
            defer { held = nil }
            return held
        }) else { return }
        close(fd)
    }
}
