import Foundation
import FuzzTargets
import Testing

/// Every entry of every fuzz corpus (the seeds and the reproducers of the bugs the
/// fuzzers found) goes through its target again: a fixed bug that comes back fails
/// here, without a fuzzer.
@Suite struct FuzzCorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Corpus")

    static let targets: [(name: String, run: @Sendable (UnsafeRawBufferPointer) -> Void)] = [
        ("JSON", JSONFuzz.run),
        ("RequestBody", RequestBodyFuzz.run),
        ("Simulator", SimulatorFuzz.run),
        ("HTTP2Server", HTTP2ServerFuzz.run),
        ("APNsClient", APNsClientFuzz.run),
        ("SwiftSchema", SwiftSchemaFuzz.run),
        ("Credentials", CredentialsFuzz.run),
    ]

    @Test(arguments: targets.map(\.name))
    func replaysCorpus(_ name: String) throws {
        let run = try #require(Self.targets.first { $0.name == name }).run
        let files = FuzzReplay.files([Self.corpus.appendingPathComponent(name).path])
        #expect(!files.isEmpty, "the \(name) corpus is empty")
        for file in files {
            let data = try Data(contentsOf: file)
            FuzzReplay.run(data, run)
        }
    }
}
