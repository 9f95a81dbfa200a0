import IsletCore

extension AnswerSchemas {
    /// The shapes the configuration routes share.
    static let configurationComponents: [String: JSONValue] = [:]
}
