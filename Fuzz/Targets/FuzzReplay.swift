public import Foundation

/// Runs fuzz inputs outside libFuzzer: the replay mode of every fuzz executable, and
/// the corpus replay test.
public enum FuzzReplay {
    /// Every file named by `paths`, a folder standing for the files in it, sorted.
    public static func files(_ paths: [String]) -> [URL] {
        var files: [URL] = []
        for path in paths {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { continue }
            if isFolder.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                for name in names.sorted() where !name.hasPrefix(".") {
                    files.append(URL(fileURLWithPath: path).appendingPathComponent(name))
                }
            } else {
                files.append(URL(fileURLWithPath: path))
            }
        }
        return files
    }

    /// Runs `target` on one input.
    public static func run(_ data: Data, _ target: (UnsafeRawBufferPointer) -> Void) {
        data.withUnsafeBytes { target($0) }
    }

    /// The replay executable: runs `target` on every file given, then says how many.
    public static func main(name: String, _ target: (UnsafeRawBufferPointer) -> Void) {
        let arguments = Array(CommandLine.arguments.dropFirst()).filter { !$0.hasPrefix("-") }
        guard !arguments.isEmpty else {
            print("usage: \(name) FILE_OR_FOLDER...  (replays each input; build with -sanitize=fuzzer -DFUZZING to fuzz)")
            exit(2)
        }
        let inputs = files(arguments)
        for file in inputs {
            guard let data = FileManager.default.contents(atPath: file.path) else {
                print("\(name): cannot read \(file.path)")
                exit(1)
            }
            run(data, target)
        }
        print("\(name): replayed \(inputs.count) input(s)")
    }
}

/// Whether `FUZZ_VERBOSE` is set: the targets then print what each input got, to
/// check that a seed reaches what it was written for.
let fuzzVerbose = ProcessInfo.processInfo.environment["FUZZ_VERBOSE"] != nil
