import Foundation

/// The `Decoder` behind ``URLEncodedFormDecoder``: reads a `FormNode` tree. A nil node is a
/// key that was absent: it reads as an empty container, and as "not found" for a single value.
struct FormTreeDecoder: Decoder, SingleValueDecodingContainer {
    let options: URLEncodedFormDecoder
    let node: FormNode?
    /// The path is built only when asked for (errors, custom `init(from:)`), not per field.
    private let parentPath: [any CodingKey]
    private let key: (any CodingKey)?
    var codingPath: [any CodingKey] { key.map { parentPath + [$0] } ?? parentPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(options: URLEncodedFormDecoder, node: FormNode?, codingPath: [any CodingKey]) {
        self.options = options
        self.node = node
        self.parentPath = codingPath
        self.key = nil
    }

    private init(options: URLEncodedFormDecoder, node: FormNode?, parentPath: [any CodingKey], key: any CodingKey) {
        self.options = options
        self.node = node
        self.parentPath = parentPath
        self.key = key
    }

    /// The decoder for a child node at `key`.
    func child(_ node: FormNode?, key: any CodingKey) -> FormTreeDecoder {
        FormTreeDecoder(options: options, node: node, parentPath: codingPath, key: key)
    }

    func unbox<T: Decodable>(_ type: T.Type) throws -> T {
        if type == String.self { return try text() as! T }
        if type == Date.self { return try options.parseDate(try text(), path: codingPath) as! T }
        if type == Data.self { return try options.parseData(try text(), path: codingPath) as! T }
        if type == URL.self {
            guard let url = URL(string: try text()) else { throw corrupted("not a URL", codingPath) }
            return url as! T
        }
        if type == Decimal.self {
            guard let decimal = Decimal(string: try text()) else { throw corrupted("not a number", codingPath) }
            return decimal as! T
        }
        return try T(from: self)
    }

    /// The single value at this node.
    func text() throws -> String {
        guard let node, !node.isEmpty else {
            if let key = codingPath.last {
                throw DecodingError.keyNotFound(
                    key, DecodingError.Context(codingPath: codingPath.dropLast(), debugDescription: "no value"))
            }
            throw DecodingError.valueNotFound(
                String.self, DecodingError.Context(codingPath: codingPath, debugDescription: "no value"))
        }
        guard node.values.count == 1, node.children.isEmpty, node.items.isEmpty else {
            throw DecodingError.typeMismatch(
                String.self,
                DecodingError.Context(
                    codingPath: codingPath,
                    debugDescription: node.values.count > 1
                        ? "expected one value, found \(node.values.count)" : "expected a value, found a container"))
        }
        return node.values[0]
    }

    private func parse<T>(_ type: T.Type, _ convert: (String) -> T?) throws -> T {
        let text = try text()
        guard let value = convert(text) else {
            throw DecodingError.typeMismatch(
                type, DecodingError.Context(codingPath: codingPath, debugDescription: "'\(text)' is not a \(type)"))
        }
        return value
    }

    // MARK: Decoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let node = self.node ?? FormNode()
        guard node.values.isEmpty, node.items.isEmpty else {
            throw DecodingError.typeMismatch(
                [String: String].self,
                DecodingError.Context(codingPath: codingPath, debugDescription: "expected keyed values, found a value"))
        }
        return KeyedDecodingContainer(FormKeyedDecodingContainer<Key>(decoder: self, node: node))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let elements = (node ?? FormNode()).elements() else {
            throw DecodingError.typeMismatch(
                [String].self,
                DecodingError.Context(codingPath: codingPath, debugDescription: "expected an array, found keyed values")
            )
        }
        return FormUnkeyedDecodingContainer(decoder: self, elements: elements)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    // MARK: SingleValueDecodingContainer

    func decodeNil() -> Bool { node == nil || node!.isEmpty }
    func decode(_ type: Bool.Type) throws -> Bool {
        try parse(type) { text in
            switch text {
            case "true", "1": return true
            case "false", "0": return false
            default: return nil
            }
        }
    }
    func decode(_ type: String.Type) throws -> String { try text() }
    func decode(_ type: Double.Type) throws -> Double { try parse(type, Double.init) }
    func decode(_ type: Float.Type) throws -> Float { try parse(type, Float.init) }
    func decode(_ type: Int.Type) throws -> Int { try parse(type) { Int($0) } }
    func decode(_ type: Int8.Type) throws -> Int8 { try parse(type) { Int8($0) } }
    func decode(_ type: Int16.Type) throws -> Int16 { try parse(type) { Int16($0) } }
    func decode(_ type: Int32.Type) throws -> Int32 { try parse(type) { Int32($0) } }
    func decode(_ type: Int64.Type) throws -> Int64 { try parse(type) { Int64($0) } }
    func decode(_ type: UInt.Type) throws -> UInt { try parse(type) { UInt($0) } }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try parse(type) { UInt8($0) } }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try parse(type) { UInt16($0) } }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try parse(type) { UInt32($0) } }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try parse(type) { UInt64($0) } }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try unbox(type) }
}

struct FormKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: FormTreeDecoder
    let node: FormNode
    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { node.children.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { node.children[key.stringValue].map { !$0.isEmpty } ?? false }

    private func child(_ key: Key) -> FormTreeDecoder { decoder.child(node.children[key.stringValue], key: key) }

    func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).unbox(type) }
    // Concrete overloads: skip `init(from:)` and its existential container for primitives.
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key).text() }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key).decode(type) }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try child(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { decoder.child(node.children["super"], key: FormNameKey.super) }
    func superDecoder(forKey key: Key) throws -> any Decoder { child(key) }
}

struct FormUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    let decoder: FormTreeDecoder
    let elements: [FormNode]
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }
    private(set) var currentIndex = 0

    init(decoder: FormTreeDecoder, elements: [FormNode]) {
        self.decoder = decoder
        self.elements = elements
    }

    private mutating func next(_ type: Any.Type) throws -> FormTreeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: codingPath + [FormIndexKey(currentIndex)], debugDescription: "the array has ended"))
        }
        defer { currentIndex += 1 }
        return decoder.child(elements[currentIndex], key: FormIndexKey(currentIndex))
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex].isEmpty else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type).unbox(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next(type).text() }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type).decode(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        try next(type).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([Any].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try next(Any.self) }
}
