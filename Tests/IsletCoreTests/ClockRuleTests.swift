import Foundation
import Testing

/// Everything in Islet that reads the time or waits does it through a clock it was
/// given: the wall clock and the sleeper of the services (`WallClock`, `Sleeper`), or
/// Swift's `Clock` for elapsed time (`ContinuousClock()` in production, a test's own
/// clock in tests). Only the files that define the system's clocks touch the system's
/// time; a raw read or sleep anywhere else in `Sources` fails here, naming its place.
@Suite("The clock rule")
struct ClockRuleTests {
    /// The repository's root: two folders up from this file's.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The files that define the system's clocks, and so read its time and sleep on it.
    static let clockFiles: Set<String> = [
        // `SystemWallClock`: the services' wall clock.
        "Sources/IsletCore/WallClock.swift",
        // `SystemSleeper`: waits on the monotonic clock until a wall-clock deadline.
        "Sources/IsletBackground/Sleeper.swift",
        // `ConditionLock`'s timed wait: the deadline of `pthread_cond_timedwait`.
        "Sources/IsletSync/Lock.swift",
        // The app's clock in IsletKit, which depends on Foundation alone.
        "Sources/IsletKit/AppClock.swift",
        // The HTTP/2 event loop's timers, which wait in `epoll_wait`: no Clock can
        // drive a wait in the kernel.
        "Sources/HTTP2/EventLoop.swift",
    ]

    /// What reads the system's time or sleeps on it without a clock, each with what to
    /// write instead.
    static let forbidden: [(pattern: String, instead: String)] = [
        (#"\bDate\(\)"#, "a WallClock's now()"),
        (#"\bDate\.now\b"#, "a WallClock's now()"),
        (#"\bDate\(timeIntervalSinceNow"#, "a WallClock's now().addingTimeInterval"),
        (#"\bContinuousClock(\(\))?\.now\b"#, "the now of the Clock it was given"),
        (#"\bSuspendingClock\b"#, "the Clock it was given"),
        (#"\bTask\.sleep\b"#, "the sleep of the Clock or Sleeper it was given"),
        (#"\bThread\.sleep\b"#, "a Sleeper's block(for:)"),
        (#"(?<![\w.])(u|nano)?sleep\("#, "a Sleeper, a Clock, or a condition to wait on"),
        (#"\bDispatch(Wall)?Time\.now\b"#, "the Clock it was given"),
        (#"\b(clock_gettime|gettimeofday|CFAbsoluteTimeGetCurrent)\b"#, "a WallClock or a Clock"),
        (#"\btime\(nil\)"#, "a WallClock"),
        (#"\bsystemUptime\b"#, "the Clock it was given"),
    ]

    @Test func noSourceReadsTheTimeOrSleepsOutsideAClock() throws {
        let files = try Self.swiftFiles(under: "Sources")
        #expect(files.count > 100, "only \(files.count) source files were read")
        var found: [String] = []
        for file in files where !Self.clockFiles.contains(file) {
            found += try Self.violations(in: file)
        }
        #expect(found.isEmpty, "\(found.count) places read the time or sleep outside a clock:\n\(found.joined(separator: "\n"))")
    }

    @Test func theRuleCatchesEachFormItForbids() throws {
        let samples = [
            "let t = Date()", "let t = Date.now", "let t = Date(timeIntervalSinceNow: 5)", "let i = ContinuousClock.now",
            "let i = ContinuousClock().now", "let c = SuspendingClock()", "try await Task.sleep(for: .seconds(1))",
            "Thread.sleep(forTimeInterval: 0.1)", "usleep(100)", "sleep(1)", "nanosleep(&ts, nil)",
            "let d = DispatchTime.now()", "clock_gettime(CLOCK_MONOTONIC, &ts)", "let t = time(nil)",
            "let u = ProcessInfo.processInfo.systemUptime",
        ]
        for sample in samples {
            let hits = Self.matches(in: sample)
            #expect(!hits.isEmpty, "the rule lets \(sample) by")
        }
        // What goes through a clock, or only names one, is not a match.
        let allowed = [
            "let t = clock.now()", "try await clock.sleep(for: .seconds(1))", "sleeper.block(for: 0.1)",
            "let c: any Clock<Duration> = ContinuousClock()", "// Date() in a comment", "let s = self.sleep(1)",
        ]
        for sample in allowed {
            let hits = Self.matches(in: sample)
            #expect(hits.isEmpty, "the rule refuses \(sample)")
        }
    }

    /// Every `.swift` file under `folder`, as a path from the repository's root.
    static func swiftFiles(under folder: String) throws -> [String] {
        let base = root.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(atPath: base.path) else { return [] }
        var files: [String] = []
        while let path = walker.nextObject() as? String {
            if path.hasSuffix(".swift") { files.append("\(folder)/\(path)") }
        }
        return files.sorted()
    }

    /// Each line of `file` that reads the time or sleeps outside a clock, as
    /// `file:line: text (instead: …)`.
    static func violations(in file: String) throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
        var found: [String] = []
        for (index, line) in text.components(separatedBy: "\n").enumerated() {
            for instead in matches(in: line) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                found.append("\(file):\(index + 1): \(trimmed) (instead: \(instead))")
            }
        }
        return found
    }

    /// Words one of which every forbidden form holds: a line with none is let by
    /// without running the patterns.
    static let keywords = ["Date", "Clock", "sleep", "Time", "time", "Uptime"]

    /// What to write instead, for each forbidden form `line` holds outside a comment.
    static func matches(in line: String) -> [String] {
        guard keywords.contains(where: { line.contains($0) }) else { return [] }
        let code = codePart(of: line)
        var insteads: [String] = []
        for rule in forbidden {
            let range = code.range(of: rule.pattern, options: .regularExpression)
            if range != nil { insteads.append(rule.instead) }
        }
        return insteads
    }

    /// The line before a `//` comment (one outside a string literal).
    static func codePart(of line: String) -> String {
        var inString = false
        var previous: Character = " "
        var code = ""
        for character in line {
            if character == "\"" && previous != "\\" { inString.toggle() }
            if !inString && character == "/" && previous == "/" {
                code.removeLast()
                return code
            }
            code.append(character)
            previous = character
        }
        return code
    }
}
