/// The kind of one entry of the token tape.
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

/// The token memory of a decoder, kept from one decode call to the next.
///
/// ``JSONParser`` writes the tokens of a document into it (the structural index, or tape);
/// the last token is a `null` sentinel, used by `superDecoder(forKey:)` for absent keys.
struct JSONTokenStorage {
    /// The largest buffer kept between calls (1 MiB of tokens); a bigger one is freed.
    static let retainedCapacity = 1 << 16

    var pointer: UnsafeMutablePointer<JSONToken>?
    var capacity = 0

    /// Frees the buffer if it is larger than a decoder should keep while idle (or always).
    mutating func trim(keepingUpTo limit: Int = retainedCapacity) {
        guard capacity > limit else { return }
        pointer?.deallocate()
        pointer = nil
        capacity = 0
    }
}

/// Why a document is not valid JSON, with the byte offset where the parser gave up.
///
/// It is the `underlyingError` of the `DecodingError.dataCorrupted` that
/// ``CourierJSONDecoder`` throws for malformed input.
struct JSONSyntaxError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What is wrong.
    var reason: String
    /// The byte offset in the input.
    var offset: Int

    var description: String { "\(reason) at byte \(offset)" }
}
