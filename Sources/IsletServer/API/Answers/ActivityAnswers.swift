import IsletCore

extension AnswerSchemas {
    /// The shapes the activity routes share.
    static let activityComponents: [String: JSONValue] = [:]
}
