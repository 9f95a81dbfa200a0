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

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private struct Route: Sendable {
        let method: String
        let pattern: String
        let segments: [Segment]
        let handler: Handler
    }

    private var routes: [Route] = []

    /// Creates an empty router.
    public init() {}

    /// Every registered (method, pattern), in order of registration.
    public var registered: [(method: String, pattern: String)] {
        routes.map { ($0.method, $0.pattern) }
    }

    /// Adds a route. Registering the same method and pattern twice is a programming
    /// error.
    public mutating func add(_ method: String, _ pattern: String, _ handler: Handler) {
        let segments = Self.split(pattern).map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") {
                return .parameter(String(part.dropFirst().dropLast()))
            }
            return .literal(String(part))
        }
        precondition(!routes.contains { $0.method == method && $0.segments == segments }, "duplicate route \(method) \(pattern)")
        routes.append(Route(method: method.uppercased(), pattern: pattern, segments: segments, handler: handler))
    }

    /// Finds the route for `method` and `path`. Literal segments win over parameters
    /// when both match. `HEAD` finds the `GET` route of a path that has no `HEAD`
    /// route of its own (the server then sends the answer's headers without its
    /// body, as RFC 9110 says).
    public func match(method: String, path: String) -> Match {
        let found = match(exactly: method, path: path)
        if method == "HEAD", case .methodNotAllowed(let allowed, _) = found, allowed.contains("GET") {
            return match(exactly: "GET", path: path)
        }
        return found
    }

    private func match(exactly method: String, path: String) -> Match {
        let parts = Self.split(path)
        var best: (route: Route, parameters: PathParameters, literals: Int)?
        var allowed: [String] = []
        var allowedPattern: (pattern: String, literals: Int)?
        for route in routes where route.segments.count == parts.count {
            var parameters = PathParameters()
            var literals = 0
            var matched = true
            for (segment, part) in zip(route.segments, parts) {
                switch segment {
                case .literal(let text):
                    if text != part { matched = false } else { literals += 1 }
                case .parameter(let name):
                    if part.isEmpty { matched = false } else { parameters[name] = String(part) }
                }
                if !matched { break }
            }
            guard matched else { continue }
            if route.method != method {
                if !allowed.contains(route.method) { allowed.append(route.method) }
                if route.method == "GET" && !allowed.contains("HEAD") { allowed.append("HEAD") }
                if allowedPattern == nil || literals > allowedPattern!.literals { allowedPattern = (route.pattern, literals) }
                continue
            }
            if best == nil || literals > best!.literals {
                best = (route, parameters, literals)
            }
        }
        if let best { return .found(best.route.handler, best.parameters, pattern: best.route.pattern) }
        guard let allowedPattern else { return .notFound }
        return .methodNotAllowed(allowed: allowed, pattern: allowedPattern.pattern)
    }

    private static func split(_ path: String) -> [Substring] {
        var trimmed = Substring(path)
        while trimmed.hasPrefix("/") { trimmed = trimmed.dropFirst() }
        if trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        return trimmed.isEmpty ? [] : trimmed.split(separator: "/", omittingEmptySubsequences: false)
    }
}
