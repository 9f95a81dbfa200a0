/// Request or response header fields, for every transport (the HTTP/1.1 server,
/// the HTTP/2 client and server, the outbound client). Names keep the case they
/// were given in and are compared case-insensitively (ASCII, without allocating);
/// order and repeats are kept. The storage is one array of pairs, so that a
/// transport that has its fields as such an array wraps it without a copy.
public struct HTTPHeaders: Sendable, RandomAccessCollection, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral {
    public typealias Field = (name: String, value: String)

    private var fields: [Field]

    /// Creates empty headers.
    public init() { fields = [] }

    /// The fields `fields`, in order (the array is kept as it is).
    public init(_ fields: [Field]) { self.fields = fields }

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    public init(arrayLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    public var startIndex: Int { fields.startIndex }
    public var endIndex: Int { fields.endIndex }

    /// The field at `position`.
    public subscript(position: Int) -> Field { fields[position] }

    /// Appends a field.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every field named `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        fields.removeAll { HTTPHeaders.sameName($0.name, name) }
        fields.append((name, value))
    }

    /// Removes every field.
    public mutating func removeAll(keepingCapacity: Bool = false) {
        fields.removeAll(keepingCapacity: keepingCapacity)
    }

    /// Every value of `name`, in order.
    public func values(of name: String) -> [String] {
        fields.filter { HTTPHeaders.sameName($0.name, name) }.map(\.value)
    }

    /// The first value of `name`, if any.
    public subscript(name: String) -> String? {
        fields.first { HTTPHeaders.sameName($0.name, name) }?.value
    }

    /// Whether two field names are equal ignoring ASCII case, without allocating.
    public static func sameName(_ a: String, _ b: String) -> Bool {
        var a = a.utf8.makeIterator()
        var b = b.utf8.makeIterator()
        while true {
            switch (a.next(), b.next()) {
            case (nil, nil): return true
            case (let x?, let y?):
                if x == y { continue }
                let lowerX = (0x41...0x5A).contains(x) ? x | 0x20 : x
                let lowerY = (0x41...0x5A).contains(y) ? y | 0x20 : y
                if lowerX != lowerY { return false }
            default: return false
            }
        }
    }
}
