import Foundation
import Testing

/// README.md is the front page and docs/ holds the reference, each page linking to
/// the others and to the repository's files: a link that reaches no file, or an
/// anchor that names no heading, fails here.
@Suite("Documentation links")
struct DocumentationLinkTests {
    /// The repository's root: two folders up from this file's.
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func everyRelativeLinkAndAnchorInTheDocumentationResolves() throws {
        let pages = try MarkdownPage.documentation(in: Self.root)
        var byPath: [String: MarkdownPage] = [:]
        for page in pages {
            byPath[page.url.path] = page
        }
        var checked = 0
        for page in pages {
            for link in page.links {
                if let problem = try problem(with: link, on: page, pages: &byPath) {
                    Issue.record("\(page.name): the link (\(link)) \(problem)")
                }
                checked += 1
            }
        }
        let docsPages = pages.count - 1
        #expect(docsPages >= 10, "only \(docsPages) pages of docs/ were read")
        #expect(checked >= 50, "only \(checked) links were checked")
    }

    @Test func theReadmeIsShortAndLinksEveryPageOfTheDocs() throws {
        let pages = try MarkdownPage.documentation(in: Self.root)
        let readme = try #require(pages.first { $0.name == "README.md" })
        #expect(readme.lineCount <= 300, "README.md has \(readme.lineCount) lines; the reference goes in docs/")
        let linked = Set(readme.links.map { MarkdownPage.pathPart(of: $0) })
        let docs = pages.filter { $0.name.hasPrefix("docs/") }
        #expect(!docs.isEmpty)
        for page in docs where !linked.contains(page.name) {
            Issue.record("README.md does not link \(page.name)")
        }
    }

    /// What is wrong with `link` on `page`, or nil when it resolves. Pages a link
    /// reaches that were not read yet (a Markdown file outside docs/) are read then.
    private func problem(with link: String, on page: MarkdownPage, pages: inout [String: MarkdownPage]) throws -> String? {
        let path = MarkdownPage.pathPart(of: link)
        let fragment = MarkdownPage.fragment(of: link)
        var target = page.url
        if !path.isEmpty {
            let decoded = path.removingPercentEncoding ?? path
            target = page.url.deletingLastPathComponent().appendingPathComponent(decoded).standardized
            if !FileManager.default.fileExists(atPath: target.path) {
                return "reaches no file: \(target.path) does not exist"
            }
        }
        guard let fragment else { return nil }
        guard target.pathExtension == "md" else {
            return "names an anchor in a file that is not Markdown"
        }
        if pages[target.path] == nil {
            pages[target.path] = try MarkdownPage(url: target, root: Self.root)
        }
        let anchors = pages[target.path]?.anchors ?? []
        if anchors.contains(fragment) {
            return nil
        }
        return "names #\(fragment), which no heading of \(target.lastPathComponent) makes"
    }
}

/// A Markdown file as the link check reads it: the anchors its headings make and
/// the targets of its links and images, both outside fenced code blocks.
private struct MarkdownPage {
    let url: URL
    /// The path from the repository's root: `README.md`, `docs/api.md`.
    let name: String
    let lineCount: Int
    let anchors: Set<String>
    /// Every relative target, `[text](target)` or `![alt](target)`.
    let links: [String]

    /// README.md first, then every page of docs/, by name.
    static func documentation(in root: URL) throws -> [MarkdownPage] {
        let docs = root.appendingPathComponent("docs")
        let names = try FileManager.default.contentsOfDirectory(atPath: docs.path)
            .filter { $0.hasSuffix(".md") }
            .sorted()
        var pages = [try MarkdownPage(url: root.appendingPathComponent("README.md"), root: root)]
        for name in names {
            pages.append(try MarkdownPage(url: docs.appendingPathComponent(name), root: root))
        }
        return pages
    }

    init(url: URL, root: URL) throws {
        self.url = url.standardized
        let rootPath = root.standardized.path + "/"
        let path = self.url.path
        name = path.hasPrefix(rootPath) ? String(path.dropFirst(rootPath.count)) : path
        let lines = try String(contentsOf: self.url, encoding: .utf8).components(separatedBy: "\n")
        lineCount = lines.last == "" ? lines.count - 1 : lines.count
        var anchors = Set<String>()
        var uses: [String: Int] = [:]
        var prose: [String] = []
        var inFence = false
        for line in lines {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                inFence.toggle()
                prose.append("")
                continue
            }
            if inFence {
                prose.append("")
                continue
            }
            prose.append(line)
            if let heading = Self.headingText(line) {
                let slug = Self.slug(heading)
                let earlier = uses[slug, default: 0]
                uses[slug] = earlier + 1
                anchors.insert(earlier == 0 ? slug : "\(slug)-\(earlier)")
            }
        }
        self.anchors = anchors
        let text = Self.withoutCodeSpans(prose.joined(separator: "\n"))
        links = Self.linkTargets(in: text).filter { !Self.isAbsolute($0) }
    }

    /// The text of an ATX heading (`## Delivery`), or nil for any other line.
    static func headingText(_ line: String) -> String? {
        let hashes = line.prefix { $0 == "#" }
        guard (1...6).contains(hashes.count) else { return nil }
        let rest = line.dropFirst(hashes.count)
        guard rest.first == " " else { return nil }
        return rest.trimmingCharacters(in: .whitespaces)
    }

    /// GitHub's anchor for a heading: its text without code marks and link targets,
    /// lowercased, punctuation but hyphens and underscores dropped, spaces as hyphens.
    static func slug(_ heading: String) -> String {
        var slug = ""
        for character in withoutLinkTargets(heading).lowercased() {
            if character == " " {
                slug.append("-")
            } else if character == "-" || character == "_" || character.isLetter || character.isNumber {
                slug.append(character)
            }
        }
        return slug
    }

    /// `[text](target)` as `[text]`: what a heading shows of its links.
    static func withoutLinkTargets(_ text: String) -> String {
        var result = ""
        var rest = Substring(text)
        while let open = rest.range(of: "](") {
            result.append(contentsOf: rest[..<open.lowerBound])
            let after = rest[open.upperBound...]
            guard let close = after.firstIndex(of: ")") else {
                rest = after
                break
            }
            rest = after[after.index(after: close)...]
        }
        result.append(contentsOf: rest)
        return result
    }

    /// The text without its code spans: a run of backticks up to the next run of
    /// as many, across lines as Markdown allows (a link in code is no link).
    static func withoutCodeSpans(_ text: String) -> String {
        let characters = Array(text)
        var result = ""
        var index = 0
        while index < characters.count {
            if characters[index] != "`" {
                result.append(characters[index])
                index += 1
                continue
            }
            let run = backtickRun(in: characters, at: index)
            if let close = closingRun(of: run, in: characters, from: index + run) {
                index = close + run
            } else {
                result.append(contentsOf: String(repeating: "`", count: run))
                index += run
            }
        }
        return result
    }

    static func backtickRun(in characters: [Character], at start: Int) -> Int {
        var end = start
        while end < characters.count && characters[end] == "`" {
            end += 1
        }
        return end - start
    }

    /// Where the next run of exactly `run` backticks from `start` begins.
    static func closingRun(of run: Int, in characters: [Character], from start: Int) -> Int? {
        var index = start
        while index < characters.count {
            if characters[index] != "`" {
                index += 1
                continue
            }
            let length = backtickRun(in: characters, at: index)
            if length == run {
                return index
            }
            index += length
        }
        return nil
    }

    /// The target of every `](target)` in the text.
    static func linkTargets(in text: String) -> [String] {
        var targets: [String] = []
        var rest = Substring(text)
        while let open = rest.range(of: "](") {
            let after = rest[open.upperBound...]
            let target = after.prefix { $0 != ")" && !$0.isWhitespace }
            let closed = after.dropFirst(target.count).first == ")"
            if closed && !target.isEmpty {
                targets.append(String(target))
            }
            rest = after
        }
        return targets
    }

    static func isAbsolute(_ target: String) -> Bool {
        let lowered = target.lowercased()
        return lowered.hasPrefix("http:") || lowered.hasPrefix("https:") || lowered.hasPrefix("mailto:")
    }

    /// `api.md` of `api.md#device-secrets`; empty for `#device-secrets`.
    static func pathPart(of link: String) -> String {
        String(link.prefix { $0 != "#" })
    }

    /// `device-secrets` of `api.md#device-secrets`; nil without a `#`.
    static func fragment(of link: String) -> String? {
        guard let hash = link.firstIndex(of: "#") else { return nil }
        return String(link[link.index(after: hash)...])
    }
}
