import Foundation
import PackagePlugin

/// Embeds a target's web assets (its `.html`, `.js` and `.css` files) in the
/// binary: one build command runs `EmbedAssetsTool`, which writes them as string
/// constants of `enum EmbeddedAssets` in a Swift file the target compiles. The files
/// stay ordinary files that editors and linters see; the binary reads none of them at
/// run time.
@main
struct EmbedAssets: BuildToolPlugin {
    /// The extensions of the files embedded.
    static let extensions: Set<String> = ["html", "js", "css"]

    func createBuildCommands(context: PluginContext, target: any Target) async throws -> [Command] {
        guard let target = target as? SourceModuleTarget else { return [] }
        let assets = target.sourceFiles
            .filter { Self.extensions.contains($0.url.pathExtension) }
            .map(\.url)
            .sorted { $0.path < $1.path }
        guard !assets.isEmpty else { return [] }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedAssets.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(assets.count) asset(s) of \(target.name)",
                executable: try context.tool(named: "EmbedAssetsTool").url,
                arguments: [output.path] + assets.map(\.path),
                inputFiles: assets,
                outputFiles: [output])
        ]
    }
}
