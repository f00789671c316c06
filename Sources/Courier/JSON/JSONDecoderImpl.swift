import Foundation

/// Why a scalar could not be read, before a coding path is attached.
enum JSONValueFailure: Error {
    case null
    case mismatch
    case notRepresentable
    case corrupted(String)
}

/// The options of one decode call, copied from ``CourierJSONDecoder``.
struct JSONDecodingOptions {
    var keyDecodingStrategy: JSONDecoder.KeyDecodingStrategy
    var dateDecodingStrategy: JSONDecoder.DateDecodingStrategy
    var dataDecodingStrategy: JSONDecoder.DataDecodingStrategy
    var nonConformingFloatDecodingStrategy: JSONDecoder.NonConformingFloatDecodingStrategy
    var userInfo: [CodingUserInfoKey: any Sendable]
    var usesDefaultKeys: Bool
}

/// The `Decoder` handed to `init(from:)`: one instance per decode call, moved over the tape.
///
/// Nested values are decoded by pointing `index` at them and pushing a key on `path`, then
/// restoring both, so decoding a nested struct allocates nothing but its container box.
/// Containers remember the path depth at which they were made.
final class JSONDecoderImpl: Decoder {
    let bytes: UnsafePointer<UInt8>
    let tape: JSONTape
    let tokens: UnsafeMutablePointer<JSONToken>
    let options: JSONDecodingOptions
    /// The token of the value `init(from:)` is decoding right now.
    var index: Int
    /// The coding path of the value at `index`.
    var path: [any CodingKey]
    /// Index of a `null` token appended after the document, for `superDecoder` of absent keys.
    let nullIndex: Int
    /// The object whose members were last looked up, and the key token expected next.
    var hintObject = -1
    var hintKey = 0
    /// Cleared when the decode call returns; the bytes are gone after that.
    var isValid = true
    /// Decoders made by `superDecoder()`, invalidated with this one.
    var subDecoders: [JSONDecoderImpl] = []

    init(
        bytes: UnsafePointer<UInt8>, tape: JSONTape, options: JSONDecodingOptions, index: Int,
        path: [any CodingKey], nullIndex: Int
    ) {
        self.bytes = bytes
        self.tape = tape
        self.tokens = tape.tokens
        self.options = options
        self.index = index
        self.path = path
        self.nullIndex = nullIndex
    }

    var codingPath: [any CodingKey] { path }
    var userInfo: [CodingUserInfoKey: Any] { options.userInfo }

    /// Called when the decode call returns: later use throws instead of reading freed bytes.
    func invalidate() {
        isValid = false
        for decoder in subDecoders { decoder.invalidate() }
    }

    func checkValid() throws {
        guard isValid else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: path,
                    debugDescription: "A decoder or container was used after its decode call returned."))
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try checkValid()
        return KeyedDecodingContainer(
            try JSONKeyedContainer<Key>(impl: self, object: index, depth: path.count, suffix: []))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try checkValid()
        return try JSONUnkeyedContainer(impl: self, array: index, depth: path.count, suffix: [])
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try checkValid()
        return JSONSingleValueContainer(impl: self, value: index, depth: path.count)
    }

    /// The coding path of a container made at `depth`, plus an optional last key.
    func path(depth: Int, suffix: [any CodingKey] = [], appending key: (any CodingKey)? = nil) -> [any CodingKey] {
        var result = Array(path.prefix(depth))
        result.append(contentsOf: suffix)
        if let key { result.append(key) }
        return result
    }

    // MARK: Nested values

    /// Decodes the value at token `value` as `T`, with `key` appended to the coding path.
    ///
    /// Date, Data, URL, Decimal and (with a key strategy) `[String: V]` are special-cased
    /// like Foundation does; everything else goes through `T.init(from:)`.
    func decodeValue<T: Decodable>(
        _ type: T.Type, at value: Int, depth: Int, suffix: [any CodingKey] = [], key: (any CodingKey)?
    ) throws -> T {
        if T.self == Date.self {
            return try decodeDate(at: value, depth: depth, suffix: suffix, key: key) as! T
        } else if T.self == Data.self {
            return try decodeData(at: value, depth: depth, suffix: suffix, key: key) as! T
        } else if T.self == URL.self {
            return try decodeURL(at: value, depth: depth, suffix: suffix, key: key) as! T
        } else if T.self == Decimal.self {
            return try decodeDecimal(at: value, depth: depth, suffix: suffix, key: key) as! T
        } else if !options.usesDefaultKeys, let dictionary = T.self as? any JSONStringDictionaryDecodable.Type {
            return try decodeStringDictionary(dictionary, at: value, depth: depth, suffix: suffix, key: key) as! T
        }
        return try withValue(at: value, depth: depth, suffix: suffix, key: key) { try T(from: self) }
    }

    /// Runs `body` with the decoder pointed at `value` and the path at `depth` + `suffix` + `key`.
    @inline(__always)
    func withValue<R>(
        at value: Int, depth: Int, suffix: [any CodingKey] = [], key: (any CodingKey)?, _ body: () throws -> R
    ) throws -> R {
        guard path.count >= depth else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "A container was used outside the decode call that made it."))
        }
        let savedIndex = index
        let savedHintObject = hintObject
        let savedHintKey = hintKey
        let savedPath: [any CodingKey]?
        if suffix.isEmpty && path.count == depth {
            savedPath = nil
        } else {
            // A nested container, or one used out of nesting order: rebuild its path.
            savedPath = path
            path.removeSubrange(depth...)
            path.append(contentsOf: suffix)
        }
        if let key { path.append(key) }
        index = value
        defer {
            index = savedIndex
            hintObject = savedHintObject
            hintKey = savedHintKey
            if let savedPath { path = savedPath } else { path.removeSubrange(depth...) }
        }
        return try body()
    }

    private func decodeStringDictionary(
        _ type: any JSONStringDictionaryDecodable.Type, at value: Int, depth: Int, suffix: [any CodingKey],
        key: (any CodingKey)?
    ) throws -> Any {
        let token = tokens[value]
        guard token.kind == .object else {
            throw error(
                for: token.kind == .null ? .null : .mismatch, type: [String: Any].self, at: value,
                path: path(depth: depth, suffix: suffix, appending: key))
        }
        return try withValue(at: value, depth: depth, suffix: suffix, key: key) {
            try type.init(jsonObjectAt: value, impl: self)
        }
    }

    // MARK: Errors

    /// Turns a failure into the `DecodingError` Foundation throws for it.
    func error(for failure: JSONValueFailure, type: Any.Type, at value: Int, path: [any CodingKey]) -> DecodingError {
        switch failure {
        case .null:
            return .valueNotFound(
                type,
                .init(
                    codingPath: path, debugDescription: "Cannot get value of type \(type) -- found null value instead"))
        case .mismatch:
            return .typeMismatch(
                type,
                .init(
                    codingPath: path,
                    debugDescription: "Expected to decode \(type) but found \(describe(tokens[value].kind)) instead."))
        case .notRepresentable:
            return .dataCorrupted(
                .init(
                    codingPath: path,
                    debugDescription: "Parsed JSON number <\(rawText(at: value))> does not fit in \(type)."))
        case .corrupted(let message):
            return .dataCorrupted(.init(codingPath: path, debugDescription: message))
        }
    }

    func describe(_ kind: JSONTokenKind) -> String {
        switch kind {
        case .null: return "null"
        case .true, .false: return "a bool"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "a dictionary"
        }
    }

    func rawText(at value: Int) -> String {
        let token = tokens[value]
        return String(
            decoding: UnsafeBufferPointer(start: bytes + Int(token.start), count: Int(token.length)), as: UTF8.self)
    }
}

/// `[String: V]` decodes its keys as written, whatever the key strategy (as in Foundation).
protocol JSONStringDictionaryDecodable {
    init(jsonObjectAt index: Int, impl: JSONDecoderImpl) throws
}

extension Dictionary: JSONStringDictionaryDecodable where Key == String, Value: Decodable {
    init(jsonObjectAt index: Int, impl: JSONDecoderImpl) throws {
        self.init()
        let token = impl.tokens[index]
        reserveCapacity(Int(token.length))
        let depth = impl.path.count
        var keyIndex = index + 1
        let end = Int(token.next)
        while keyIndex < end {
            let key = impl.string(at: keyIndex)
            let valueIndex = keyIndex + 1
            if self[key] == nil {
                self[key] = try impl.decodeValue(
                    Value.self, at: valueIndex, depth: depth, key: JSONKey(stringValue: key))
            }
            keyIndex = Int(impl.tokens[valueIndex].next)
        }
    }
}

/// The coding key of array elements and of dictionary keys in coding paths.
struct JSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }

    /// Foundation's name for the key of element `index` of an array.
    init(index: Int) {
        self.stringValue = "Index \(index)"
        self.intValue = index
    }

    static let `super` = JSONKey(stringValue: "super")
}
