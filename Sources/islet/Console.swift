import Foundation

/// Writes whole lines to standard output or error through `FileHandle`, which, unlike
/// the C `stdout` global, is safe to use from any concurrency domain.
enum Console {
    static func out(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func err(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
