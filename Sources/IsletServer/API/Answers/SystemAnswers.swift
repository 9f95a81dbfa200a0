import IsletCore

extension AnswerSchemas {
    /// The shapes the system routes share.
    static let systemComponents: [String: JSONValue] = [:]
}
