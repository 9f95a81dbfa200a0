import HTTPServer

/// The path's ids, checked by the formats the OpenAPI document gives them (422
/// naming the parameter when one breaks its format).
enum PathValues {
    /// The path's `name`, checked as an id.
    static func identifier(_ parameters: PathParameters, _ name: String) throws(Problem) -> String {
        try value(parameters, name)
    }

    /// The path's `activity_type`, by the rule a start applies to it (so that a
    /// push-to-start token is never stored under a type no start can name).
    static func activityType(_ parameters: PathParameters) throws(Problem) -> String {
        try value(parameters, "activity_type")
    }

    /// Checks the path's ids of a route of `pattern` (all but `app_id`, which the
    /// authentication finds or answers 404 for), as its handler reads them.
    static func check(_ parameters: PathParameters, pattern: String) throws(Problem) {
        for name in PathParameter.names(in: pattern) where name != "app_id" { _ = try value(parameters, name) }
    }

    private static func value(_ parameters: PathParameters, _ name: String) throws(Problem) -> String {
        let value = parameters[name] ?? ""
        if let problem = PathParameter.format(name).problem(value) {
            throw Problem(status: 422, detail: "The path's \(name) \(problem).", errors: [.init(field: name, message: problem)])
        }
        return value
    }
}
