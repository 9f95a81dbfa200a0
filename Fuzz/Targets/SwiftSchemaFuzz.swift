import Foundation
import IsletCore
import SwiftSchemaReader

/// The Swift schema reader (tokenizer, declaration parser, schema builder) on any
/// text: it must answer a schema or a `SwiftSchemaError`, never trap or hang. A
/// schema it answers must be one the server's schema parser accepts whole.
public enum SwiftSchemaFuzz {
    public static func run(_ bytes: UnsafeRawBufferPointer) {
        let source = String(decoding: bytes, as: UTF8.self)
        for typeName in [nil, "Attributes"] as [String?] {
            guard let schema = try? SwiftSchemaReader.schema(fromSwift: source, typeName: typeName) else { continue }
            // What the reader answers is JSON an API client would send: it prints and parses.
            guard let reparsed = try? JSONValue(parsing: Data(schema.jsonText.utf8)), reparsed == schema else {
                fatalError("the schema read from Swift does not survive a JSON round trip: \(schema.jsonText)")
            }
            for key in ["attributes", "content_state"] {
                guard let fields = schema[key] else { continue }
                let problems = FieldSchema.parseFields(fields, path: key).problems
                guard problems.isEmpty else {
                    fatalError("the schema read from Swift is one the server refuses: \(problems) in \(schema.jsonText)")
                }
            }
        }
    }
}
