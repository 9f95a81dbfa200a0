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
    func replaysCorpus(_ name: String) async throws {
        let run = try #require(Self.targets.first { $0.name == name }).run
        let files = FuzzReplay.files([Self.corpus.appendingPathComponent(name).path])
        #expect(!files.isEmpty, "the \(name) corpus is empty")
        let inputs = try files.map { try Data(contentsOf: $0) }
        // On a thread of its own, as libFuzzer calls a target: some targets wait for
        // async work to finish, and a thread of the concurrency pool blocked in such
        // a wait could leave that work no thread to run on.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                for data in inputs { FuzzReplay.run(data, run) }
                done.resume()
            }.start()
        }
    }
}
