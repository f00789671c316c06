import Foundation

/// An unkeyed container over one array of the tape; `cursor` walks the element tokens.
struct JSONUnkeyedContainer: UnkeyedDecodingContainer {
    let impl: JSONDecoderImpl
    let depth: Int
    let suffix: [any CodingKey]
    let count: Int?
    private(set) var currentIndex = 0
    private var cursor: Int

    init(impl: JSONDecoderImpl, array: Int, depth: Int, suffix: [any CodingKey]) throws {
        let token = impl.tokens[array]
        guard token.kind == .array else {
            let path = impl.path(depth: depth, suffix: suffix)
            if token.kind == .null {
                throw DecodingError.valueNotFound(
                    [Any].self,
                    .init(
                        codingPath: path,
                        debugDescription: "Cannot get unkeyed decoding container -- found null value instead"))
            }
            throw impl.error(for: .mismatch, type: [Any].self, at: array, path: path)
        }
        self.impl = impl
        self.depth = depth
        self.suffix = suffix
        self.count = Int(token.length)
        self.cursor = array + 1
    }

    var codingPath: [any CodingKey] { impl.path(depth: depth, suffix: suffix) }
    var isAtEnd: Bool { currentIndex >= count! }

    @inline(__always)
    private func current<T>(_ type: T.Type) throws -> Int {
        guard currentIndex < count! else {
            throw DecodingError.valueNotFound(
                type,
                .init(
                    codingPath: impl.path(depth: depth, suffix: suffix, appending: JSONKey(index: currentIndex)),
                    debugDescription: "Unkeyed container is at end."))
        }
        try impl.checkValid()
        return cursor
    }

    @inline(__always)
    private mutating func advance() {
        cursor = Int(impl.tokens[cursor].next)
        currentIndex += 1
    }

    mutating func decodeNil() throws -> Bool {
        guard impl.tokens[try current(Never.self)].kind == .null else { return false }
        advance()
        return true
    }

    @inline(__always)
    private mutating func scalar<T: JSONScalar>(_ type: T.Type) throws -> T {
        let value = try current(type)
        do {
            let result = try T.read(impl, at: value)
            advance()
            return result
        } catch {
            throw impl.error(
                for: error, type: type, at: value,
                path: impl.path(depth: depth, suffix: suffix, appending: JSONKey(index: currentIndex)))
        }
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try scalar(type) }
    mutating func decode(_ type: String.Type) throws -> String { try scalar(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try scalar(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try scalar(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try scalar(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try scalar(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try scalar(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try scalar(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try scalar(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try scalar(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try scalar(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try scalar(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try scalar(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try scalar(type) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try current(type)
        let result = try impl.decodeValue(
            type, at: value, depth: depth, suffix: suffix, key: JSONKey(index: currentIndex))
        advance()
        return result
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let value = try current(KeyedDecodingContainer<NestedKey>.self)
        let container = try JSONKeyedContainer<NestedKey>(
            impl: impl, object: value, depth: depth, suffix: suffix + [JSONKey(index: currentIndex)])
        advance()
        return KeyedDecodingContainer(container)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let value = try current((any UnkeyedDecodingContainer).self)
        let container = try JSONUnkeyedContainer(
            impl: impl, array: value, depth: depth, suffix: suffix + [JSONKey(index: currentIndex)])
        advance()
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let value = try current((any Decoder).self)
        let decoder = impl.subDecoder(
            at: value, path: impl.path(depth: depth, suffix: suffix, appending: JSONKey(index: currentIndex)))
        advance()
        return decoder
    }
}

/// The single-value container: the decoder's current value.
struct JSONSingleValueContainer: SingleValueDecodingContainer {
    let impl: JSONDecoderImpl
    let value: Int
    let depth: Int

    var codingPath: [any CodingKey] { impl.path(depth: depth) }

    func decodeNil() -> Bool { impl.isValid && impl.tokens[value].kind == .null }

    @inline(__always)
    private func scalar<T: JSONScalar>(_ type: T.Type) throws -> T {
        try impl.checkValid()
        do {
            return try T.read(impl, at: value)
        } catch {
            throw impl.error(for: error, type: type, at: value, path: codingPath)
        }
    }

    func decode(_ type: Bool.Type) throws -> Bool { try scalar(type) }
    func decode(_ type: String.Type) throws -> String { try scalar(type) }
    func decode(_ type: Double.Type) throws -> Double { try scalar(type) }
    func decode(_ type: Float.Type) throws -> Float { try scalar(type) }
    func decode(_ type: Int.Type) throws -> Int { try scalar(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try scalar(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try scalar(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try scalar(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try scalar(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try scalar(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try scalar(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try scalar(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try scalar(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try scalar(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try impl.checkValid()
        return try impl.decodeValue(type, at: value, depth: depth, key: nil)
    }
}
