/// The kind of one entry of a ``JSONTape``.
enum JSONTokenKind: UInt8 {
    case null, `true`, `false`, number, string, array, object
}

/// One entry of the structural index of a document.
///
/// Scalars point at their bytes; containers know how many elements they hold and where the
/// next sibling starts, so a decoder can skip a whole subtree in O(1).
struct JSONToken {
    /// Bit set on a string whose raw bytes contain a backslash escape.
    static let hasEscapes: UInt8 = 1
    /// Bit set on a number written without fraction or exponent.
    static let isInteger: UInt8 = 2
    /// Bit set on an object once its keys were checked for duplicates.
    static let keysChecked: UInt8 = 4
    /// Bit set on an object that has (or may have) the same key twice.
    static let mayHaveDuplicateKeys: UInt8 = 8

    var kind: JSONTokenKind
    var flags: UInt8
    /// Byte offset of the value (for strings: the first byte after the opening quote).
    var start: UInt32
    /// Byte length for scalars (strings: raw length between the quotes); element count for
    /// containers (objects: number of members).
    var length: UInt32
    /// Index of the token after this value and all of its descendants.
    var next: UInt32
}

/// The structural index of a JSON document, built in one pass by ``JSONParser``.
///
/// The parser fills the buffer through its own local pointer (appending is its hottest
/// operation); the tape takes ownership of it afterwards. The last token is a `null`
/// sentinel, used by `superDecoder(forKey:)` for absent keys.
final class JSONTape {
    let tokens: UnsafeMutablePointer<JSONToken>
    let count: Int

    init(tokens: UnsafeMutablePointer<JSONToken>, count: Int) {
        self.tokens = tokens
        self.count = count
    }

    deinit { tokens.deallocate() }

    var nullIndex: Int { count - 1 }
}

/// Why a document is not valid JSON, with the byte offset where the parser gave up.
///
/// It is the `underlyingError` of the `DecodingError.dataCorrupted` that
/// ``CourierJSONDecoder`` throws for malformed input.
public struct JSONSyntaxError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What is wrong.
    public var reason: String
    /// The byte offset in the input.
    public var offset: Int

    public var description: String { "\(reason) at byte \(offset)" }
}
