/// Values taken from a request path by a route pattern's `{name}` segments.
public struct PathParameters: Sendable {
    private var values: [String: String] = [:]

    /// Creates an empty set.
    public init() {}

    /// The value for `name`, if the pattern has such a segment.
    public subscript(name: String) -> String? {
        get { values[name] }
        set { values[name] = newValue }
    }
}

/// A router whose handlers are async (they run on the concurrency pool).
public typealias Router = RouteTable<@Sendable (HTTPRequest, PathParameters) async -> HTTPResponse>

/// A router whose handlers answer at once, on the server's own thread.
public typealias ImmediateRouter = RouteTable<@Sendable (HTTPRequest, PathParameters) -> HTTPResponse>

/// Maps a method and a path to a handler. Patterns are literal segments and `{name}`
/// segments, each matching exactly one path segment: `/v1/apps/{app_id}`.
public struct RouteTable<RouteHandler: Sendable>: Sendable {
    /// A route's handler.
    public typealias Handler = RouteHandler

    /// The outcome of matching a request.
    public enum Match: Sendable {
        /// A route matched: its handler, the values of its parameters and its pattern
        /// (for metrics and logs, which must not carry ids).
        case found(Handler, PathParameters, pattern: String)
        /// The path exists but not for this method: the methods that it takes (`HEAD`
        /// wherever `GET` is), and the pattern of the route the path matched.
        case methodNotAllowed(allowed: [String], pattern: String)
        /// No route has this path.
        case notFound
    }

    // The routes' patterns, apart from their handlers: matching runs over this
    // plain list (no generic value is copied per route looked at), and only the
    // winner's handler is read. Routes are grouped by their number of segments,
    // since a path matches only patterns of as many.
    private var patterns: [RoutePattern] = []
    private var handlers: [Handler] = []
    private var bySegmentCount: [Int: [Int]] = [:]

    /// Creates an empty router.
    public init() {}

    /// Every registered (method, pattern), in order of registration.
    public var registered: [(method: String, pattern: String)] {
        patterns.map { ($0.method, $0.pattern) }
    }

    /// Adds a route. Registering the same method and pattern twice is a programming
    /// error.
    public mutating func add(_ method: String, _ pattern: String, _ handler: Handler) {
        let segments = RoutePattern.split(pattern).map { part -> RoutePattern.Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") {
                return .parameter(String(part.dropFirst().dropLast()))
            }
            return .literal(String(part))
        }
        precondition(!patterns.contains { $0.method == method && $0.segments == segments }, "duplicate route \(method) \(pattern)")
        bySegmentCount[segments.count, default: []].append(patterns.count)
        patterns.append(RoutePattern(method: method.uppercased(), pattern: pattern, segments: segments))
        handlers.append(handler)
    }

    /// Finds the route for `method` and `path`. Literal segments win over parameters
    /// when both match. `HEAD` finds the `GET` route of a path that has no `HEAD`
    /// route of its own (the server then sends the answer's headers without its
    /// body, as RFC 9110 says).
    public func match(method: String, path: String) -> Match {
        let parts = RoutePattern.split(path)
        let candidates = bySegmentCount[parts.count] ?? []
        let found = RoutePattern.match(method: method, parts: parts, in: patterns, candidates: candidates)
        if method == "HEAD", case .methodNotAllowed(let allowed, _) = found, allowed.contains("GET") {
            return match(RoutePattern.match(method: "GET", parts: parts, in: patterns, candidates: candidates))
        }
        return match(found)
    }

    private func match(_ found: RoutePattern.Found) -> Match {
        switch found {
        case .route(let index, let parameters): .found(handlers[index], parameters, pattern: patterns[index].pattern)
        case .methodNotAllowed(let allowed, let pattern): .methodNotAllowed(allowed: allowed, pattern: pattern)
        case .notFound: .notFound
        }
    }
}

/// One route's method and pattern, as a `RouteTable` matches them.
private struct RoutePattern: Sendable {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    /// What matching found: a route by its index, or why none.
    enum Found {
        case route(Int, PathParameters)
        case methodNotAllowed(allowed: [String], pattern: String)
        case notFound
    }

    let method: String
    let pattern: String
    let segments: [Segment]

    /// The best route for `method` among `candidates` (indices into `routes`, each of
    /// as many segments as `parts`).
    static func match(method: String, parts: [Substring], in routes: [RoutePattern], candidates: [Int]) -> Found {
        var best: (index: Int, literals: Int)?
        var allowed: [String] = []
        var allowedPattern: (pattern: String, literals: Int)?
        for index in candidates {
            let segments = routes[index].segments
            var literals = 0
            var matched = true
            for (segment, part) in zip(segments, parts) {
                switch segment {
                case .literal(let text):
                    if text != part { matched = false } else { literals += 1 }
                case .parameter:
                    if part.isEmpty { matched = false }
                }
                if !matched { break }
            }
            guard matched else { continue }
            let routeMethod = routes[index].method
            if routeMethod != method {
                if !allowed.contains(routeMethod) { allowed.append(routeMethod) }
                if routeMethod == "GET" && !allowed.contains("HEAD") { allowed.append("HEAD") }
                if allowedPattern == nil || literals > allowedPattern!.literals { allowedPattern = (routes[index].pattern, literals) }
                continue
            }
            if best == nil || literals > best!.literals {
                best = (index, literals)
            }
        }
        if let best {
            // The winner's parameters, taken once.
            var parameters = PathParameters()
            for (segment, part) in zip(routes[best.index].segments, parts) {
                if case .parameter(let name) = segment { parameters[name] = String(part) }
            }
            return .route(best.index, parameters)
        }
        guard let allowedPattern else { return .notFound }
        return .methodNotAllowed(allowed: allowed, pattern: allowedPattern.pattern)
    }

    /// The segments of `path`: without its leading slashes and one trailing slash,
    /// split at every other slash (empty segments kept). Read as UTF-8 bytes: a
    /// split by `Character` walked grapheme clusters and took about 3% of the time
    /// the server spent on a registration.
    static func split(_ path: String) -> [Substring] {
        let path = Substring(path)
        let bytes = path.utf8
        let slash = UInt8(ascii: "/")
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end && bytes[start] == slash { start = bytes.index(after: start) }
        if start < end && bytes[bytes.index(before: end)] == slash { end = bytes.index(before: end) }
        guard start < end else { return [] }
        var parts: [Substring] = []
        parts.reserveCapacity(8)
        var segment = start
        var index = start
        while index < end {
            if bytes[index] == slash {
                parts.append(path[segment..<index])
                segment = bytes.index(after: index)
            }
            index = bytes.index(after: index)
        }
        parts.append(path[segment..<end])
        return parts
    }
}
