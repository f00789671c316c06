import Foundation

/// Arrays and `[String: V]` dictionaries decode straight from the tape.
///
/// The standard library's `init(from:)` for them goes through an unkeyed or keyed container
/// and grows its storage element by element, in generic code that looks up type metadata at
/// each step; reading the tape directly with the final capacity is several times cheaper.
/// A `[String: V]` keeps its keys as written whatever the key strategy, as in Foundation.
protocol JSONCollectionDecodable {
    static func decodeJSON(
        impl: JSONDecoderImpl, at value: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?
    ) throws -> Self
}

extension Array: JSONCollectionDecodable where Element: Decodable {
    static func decodeJSON(
        impl: JSONDecoderImpl, at value: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?
    ) throws -> Self {
        let token = impl.tokens[value]
        guard token.kind == .array else {
            let path = impl.path(depth: depth, suffix: suffix, appending: key)
            if token.kind == .null {
                throw DecodingError.valueNotFound(
                    [Any].self,
                    .init(
                        codingPath: path,
                        debugDescription: "Cannot get unkeyed decoding container -- found null value instead"))
            }
            throw impl.error(for: .mismatch, type: [Any].self, at: value, path: path)
        }
        return try impl.withValue(at: value, depth: depth, suffix: suffix, key: key) {
            let elementDepth = impl.path.count
            let count = Int(token.length)
            var result: [Element] = []
            result.reserveCapacity(count)
            var cursor = value + 1
            for index in 0..<count {
                result.append(
                    try impl.decodeValue(Element.self, at: cursor, depth: elementDepth, key: JSONKey(index: index)))
                cursor = Int(impl.tokens[cursor].next)
            }
            return result
        }
    }
}

extension Dictionary: JSONCollectionDecodable where Key == String, Value: Decodable {
    static func decodeJSON(
        impl: JSONDecoderImpl, at value: Int, depth: Int, suffix: [any CodingKey], key: (any CodingKey)?
    ) throws -> Self {
        let token = impl.tokens[value]
        guard token.kind == .object else {
            let path = impl.path(depth: depth, suffix: suffix, appending: key)
            if token.kind == .null {
                throw DecodingError.valueNotFound(
                    [String: Any].self,
                    .init(
                        codingPath: path,
                        debugDescription: "Cannot get keyed decoding container -- found null value instead"))
            }
            throw impl.error(for: .mismatch, type: [String: Any].self, at: value, path: path)
        }
        return try impl.withValue(at: value, depth: depth, suffix: suffix, key: key) {
            let memberDepth = impl.path.count
            var result: [String: Value] = [:]
            result.reserveCapacity(Int(token.length))
            var keyIndex = value + 1
            let end = Int(token.next)
            while keyIndex < end {
                let name = impl.string(at: keyIndex)
                let valueIndex = keyIndex + 1
                if result[name] == nil {  // the first of duplicate keys wins
                    result[name] = try impl.decodeValue(
                        Value.self, at: valueIndex, depth: memberDepth, key: JSONKey(stringValue: name))
                }
                keyIndex = Int(impl.tokens[valueIndex].next)
            }
            return result
        }
    }
}
