import ActivityKit

enum StepState: String, Codable, Hashable, CaseIterable {
    case queued
    case running
    case passed
    case failed
    case skipped
}

struct BuildStep: Codable, Hashable, Identifiable {
    var id: String { name }
    var name: String
    var state: StepState
    var durationSeconds: Int?
    var logLines: [String?]
}

struct CIBuildAttributes: ActivityAttributes {
    struct ContentState: Codable, Hashable {
        var steps: [BuildStep]
        var currentStep: Int?
        var startedAt: Date
        var finishedAt: Date?
        var artifacts: [String: URL]
        var tags: Set<String>
        var matrix: [[Swift.String]]
    }
    var repository: String
    var branch: String
    var commit: Substring
    var pipeline: Array<String>
    var buildNumber: UInt64
}
