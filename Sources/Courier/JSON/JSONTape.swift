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
/// Tokens are stored in a manually managed buffer: appending is the parser's hottest
/// operation and must not pay for copy-on-write checks.
final class JSONTape {
    private(set) var tokens: UnsafeMutablePointer<JSONToken>
    private(set) var count = 0
    private var capacity: Int

    init(estimatedBytes: Int) {
        capacity = max(16, estimatedBytes / 5)
        tokens = .allocate(capacity: capacity)
    }

    deinit { tokens.deallocate() }

    @inline(__always)
    func append(_ kind: JSONTokenKind, flags: UInt8, start: Int, length: Int) -> Int {
        if count == capacity { grow() }
        let index = count
        (tokens + index).initialize(
            to: JSONToken(
                kind: kind, flags: flags, start: UInt32(truncatingIfNeeded: start),
                length: UInt32(truncatingIfNeeded: length), next: UInt32(truncatingIfNeeded: index + 1)))
        count = index + 1
        return index
    }

    @inline(__always)
    func finishContainer(_ index: Int, elements: Int) {
        tokens[index].length = UInt32(truncatingIfNeeded: elements)
        tokens[index].next = UInt32(truncatingIfNeeded: count)
    }

    private func grow() {
        let newCapacity = capacity * 2
        let newTokens = UnsafeMutablePointer<JSONToken>.allocate(capacity: newCapacity)
        newTokens.moveInitialize(from: tokens, count: count)
        tokens.deallocate()
        tokens = newTokens
        capacity = newCapacity
    }
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
