import IsletCore

extension AnswerSchemas {
    /// The shapes the device routes share.
    static let deviceComponents: [String: JSONValue] = [:]
}
