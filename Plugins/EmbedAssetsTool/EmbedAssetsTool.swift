import Foundation

/// What the EmbedAssets plugin runs: `EmbedAssetsTool OUTPUT.swift FILE…` writes
/// each file as a string constant of `enum EmbeddedAssets`, escaped so that the
/// constant's UTF-8 is the file's bytes exactly (carriage returns and a missing or
/// present final newline included). A file that is not UTF-8 stops the build.
///
/// A constant is named after its file: `dashboard.js` gives `dashboardJS`,
/// `site-map.html` gives `siteMapHTML`.
@main
struct EmbedAssetsTool {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 2 else {
            fail("usage: EmbedAssetsTool OUTPUT.swift FILE…")
        }
        var source = """
            // Written by EmbedAssetsTool (Plugins/EmbedAssets) from the files named below: edit them, not this.

            /// The target's web assets, embedded at build time: each file's text, byte for byte.
            enum EmbeddedAssets {

            """
        var names: Set<String> = []
        for path in arguments.dropFirst() {
            let url = URL(fileURLWithPath: path)
            guard let data = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
            guard let text = String(validating: data, as: UTF8.self) else { fail("\(path) is not UTF-8") }
            let name = constantName(url.lastPathComponent)
            guard names.insert(name).inserted else { fail("two files give the constant \(name); rename one") }
            source += "    /// \(url.lastPathComponent)\n"
            source += "    static let \(name) = \(literal(text))\n"
        }
        source += "}\n"
        do {
            try Data(source.utf8).write(to: URL(fileURLWithPath: arguments[0]), options: .atomic)
        } catch {
            fail("cannot write \(arguments[0]): \(error)")
        }
    }

    /// `dashboard.js` → `dashboardJS`: the base name in lower camel case, then the
    /// extension in capitals.
    static func constantName(_ fileName: String) -> String {
        let dot = fileName.lastIndex(of: ".") ?? fileName.endIndex
        let words = fileName[..<dot].split { !($0.isLetter || $0.isNumber) }
        var name = words.enumerated().map { index, word in
            index == 0 ? word.lowercased() : word.prefix(1).uppercased() + word.dropFirst().lowercased()
        }.joined()
        if name.isEmpty || name.first!.isNumber { name = "asset" + name }
        if dot < fileName.endIndex { name += fileName[fileName.index(after: dot)...].uppercased() }
        return name
    }

    /// A Swift string literal whose value is `text`: printable ASCII as it is, the
    /// rest as escapes, so that nothing in a file can end or change the literal.
    static func literal(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case " "..."~": out.unicodeScalars.append(scalar)
            default: out += "\\u{\(String(scalar.value, radix: 16))}"
            }
        }
        return out + "\""
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("EmbedAssetsTool: \(message)\n".utf8))
        exit(1)
    }
}


#if FUZZING
/// The fuzz build (`-sanitize=fuzzer -DFUZZING`) links every executable it builds,
/// this build-time tool included, with libFuzzer, whose `main` needs this symbol. The
/// link still starts the tool at `EmbedAssetsTool.main`, so this is never called.
@_cdecl("LLVMFuzzerTestOneInput")
public func embedAssetsToolFuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { 0 }
#endif
