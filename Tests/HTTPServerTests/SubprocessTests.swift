import Foundation
import Glibc
import IsletTesting
import Testing

/// The tests' own child processes (`Subprocess`, `runCommand`): what a child
/// inherits, how it ends, and that none is left behind.
@Suite("Test child processes", .requires(.processes))
struct SubprocessTests {
    /// A descriptor opened without close-on-exec (as a library might) is still not
    /// the child's: only its standard input, output and error are.
    @Test func aChildInheritsNoDescriptorButItsThree() async throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { for fd in ends { close(fd) } }
        var info = stat()
        try #require(fstat(ends[0], &info) == 0)
        let child = try Subprocess(
            "/usr/bin/find", ["/proc/self/fd/", "-mindepth", "1", "-printf", "%f %l\n"], standardOutput: .collect)
        #expect(await child.exited())
        #expect(await eventually { child.standardOutputClosed })
        let listed = child.standardOutput
        #expect(listed.contains("1 pipe:["), "\(listed)")
        #expect(!listed.contains("pipe:[\(info.st_ino)]"), "\(listed)")
        #expect(child.termination == .exit(0))
    }

    /// A child starts with no signal blocked or ignored, whatever the spawning
    /// thread had: otherwise SIGTERM could never stop it.
    @Test func aChildStartsWithEverySignalAtItsDefault() async throws {
        // On a thread of its own: the mask is that thread's, and the wait for the
        // child holds no thread of the concurrency pool.
        let status = try await runBlocking {
            var blocked = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGTERM)
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            return try runCommand("/bin/grep", ["-E", "^Sig(Blk|Ign):", "/proc/self/status"])
        }
        #expect(status.status == 0)
        // The masks in hexadecimal, bit n - 1 for signal n. Signals 1 to 31 are
        // looked at: glibc keeps two real-time signals above them for itself.
        let masks = status.output.split(separator: "\n").map { line in
            UInt64(line.split(separator: "\t").last ?? "", radix: 16)
        }
        #expect(masks.count == 2, "\(status.output)")
        #expect(masks.allSatisfy { $0.map { $0 & 0x7fff_ffff } == 0 }, "\(status.output)")
    }

    @Test func anExitAndASignalAreTold() async throws {
        let exiting = try Subprocess("/bin/sh", ["-c", "exit 3"])
        #expect(await exiting.exited())
        #expect(exiting.termination == .exit(3))
        #expect(!exiting.isRunning)

        let sleeping = try Subprocess("/bin/sleep", ["60"])
        #expect(sleeping.isRunning)
        #expect(sleeping.termination == nil)
        sleeping.terminate()
        #expect(await sleeping.exited())
        #expect(sleeping.termination == .signal(SIGTERM))
    }

    /// A child still running when its last reference goes is killed and reaped: no
    /// process and no zombie stays behind.
    @Test func aChildIsNeverLeftBehind() async throws {
        // The release kills and reaps, waiting: on a thread of its own.
        let (alive, gone) = try await runBlocking { () throws -> (Bool, Bool) in
            var alive = false
            let pid: Int32 = try {
                let child = try Subprocess("/bin/sleep", ["60"])
                alive = kill(child.processIdentifier, 0) == 0
                return child.processIdentifier
            }()
            // Its last reference went with that closure: reaped, so the id names no
            // process (not even a zombie).
            return (alive, kill(pid, 0) == -1 && errno == ESRCH)
        }
        #expect(alive)
        #expect(gone)
    }

    /// Both streams are read as they come: a child that fills one pipe while we
    /// wait on the other does not stall.
    @Test func bothStreamsAreReadToTheirEnd() async throws {
        let child = try Subprocess(
            "/bin/sh", ["-c", "head -c 300000 /dev/zero | tr '\\0' e >&2; echo out"],
            standardOutput: .collect, standardError: .collect)
        #expect(await child.exited())
        #expect(await eventually { child.standardOutputClosed && child.standardError.utf8.count == 300_000 })
        #expect(child.standardOutput == "out\n")
        #expect(child.standardError.allSatisfy { $0 == "e" })
    }

    @Test func theFolderTheEnvironmentAndAFileAreTheChildsOwn() async throws {
        try await withTemporaryDirectory { folder in
            let log = folder.appendingPathComponent("log.txt").path
            let child = try Subprocess(
                "/bin/sh", ["-c", "pwd; echo \"$ISLET_SUBPROCESS_TEST\"; echo err >&2"],
                environment: ["ISLET_SUBPROCESS_TEST": "given"], directory: folder.path,
                standardOutput: .file(log), standardError: .file(log))
            #expect(await child.exited())
            let written = try String(contentsOfFile: log, encoding: .utf8)
            let real = folder.resolvingSymlinksInPath().path
            #expect(written == "\(real)\ngiven\nerr\n" || written == "\(folder.path)\ngiven\nerr\n", "\(written)")
        }
    }

    @Test func aMissingProgramIsAnError() async {
        #expect(throws: CommandError.self) { try Subprocess("/no/such/program", []) }
        #expect(throws: CommandError.self) { try runCommand("/no/such/program", []) }
    }
}
