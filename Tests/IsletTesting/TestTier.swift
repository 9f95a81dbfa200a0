import Foundation
public import Testing

/// What a test needs beyond the Debian libraries the build links. Plain `swift test`
/// runs only the hermetic tests; a test that needs one of these runs only when
/// `ISLET_TEST_TIERS` names it (a comma-separated list, or `all`, which `make test`
/// sets), and says in one line what it needs when it is skipped.
public enum TestTier: String, CaseIterable, Sendable {
    /// A PostgreSQL server (`ISLET_TEST_POSTGRES_URL`, started by scripts/with-postgres.sh).
    case postgres
    /// Headless Chromium and its driver (scripts/test-tools.sh installs them).
    case browser
    /// The Python tools of scripts/test-requirements.txt in .build/test-venv.
    case python
    /// Node.js, for the syntax check of the dashboard's script.
    case node
    /// Child processes: the built `islet` executable or other programs spawned.
    case processes

    /// The variable that enables tiers.
    public static let variable = "ISLET_TEST_TIERS"

    /// The tiers the environment enables.
    public static var enabled: Set<TestTier> {
        let text = ProcessInfo.processInfo.environment[variable] ?? ""
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        if names.contains("all") { return Set(allCases) }
        return Set(names.compactMap(TestTier.init(rawValue:)))
    }

    /// Whether this tier runs.
    public var isEnabled: Bool { Self.enabled.contains(self) }

    /// What the tier needs, for the line a skipped test prints.
    public var need: String {
        switch self {
        case .postgres: "a PostgreSQL server (scripts/with-postgres.sh)"
        case .browser: "headless Chromium (scripts/test-tools.sh)"
        case .python: "the Python test tools (scripts/test-tools.sh)"
        case .node: "Node.js"
        case .processes: "child processes (the built islet executable, openssl, /bin/sh)"
        }
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test or suite only when every tier named is enabled; skipped, it says
    /// what it needs and how to enable it: `tier skipped: needs …; set ISLET_TEST_TIERS=…`.
    public static func requires(_ tiers: TestTier..., sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        let missing = tiers.filter { !$0.isEnabled }
        let note = "tier skipped: needs " + tiers.map(\.need).joined(separator: " and ")
            + "; set \(TestTier.variable)=\(tiers.map(\.rawValue).joined(separator: ",")) or run make test"
        return .enabled(if: missing.isEmpty, Comment(rawValue: note), sourceLocation: sourceLocation)
    }
}
