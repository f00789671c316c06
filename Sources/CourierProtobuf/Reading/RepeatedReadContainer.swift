import CProtobufC
import Foundation

/// Reads a repeated field (or map) as a Swift collection: direct copies for arrays of scalars
/// and strings and for `[String: Int32]`/`[String: String]` maps; the collection's own
/// `init(from:)` over a reader focused on the field otherwise.
@inline(__always)
func readRepeated<T: Decodable>(_ type: T.Type, field: FieldPlan, base: UnsafeRawPointer) throws
    -> T
{
    let count = base.load(fromByteOffset: field.quantifierOffset, as: Int.self)
    let array = base.load(fromByteOffset: field.offset, as: UnsafeRawPointer?.self)
    switch field.kind {
    case .int32, .sint32, .sfixed32, .enumeration:
        if T.self == [Int32].self { return unsafeBitCast(copy(array, count, Int32.self), to: T.self) }
    case .int64, .sint64, .sfixed64:
        if T.self == [Int64].self { return unsafeBitCast(copy(array, count, Int64.self), to: T.self) }
    case .uint32, .fixed32:
        if T.self == [UInt32].self { return unsafeBitCast(copy(array, count, UInt32.self), to: T.self) }
    case .uint64, .fixed64:
        if T.self == [UInt64].self { return unsafeBitCast(copy(array, count, UInt64.self), to: T.self) }
    case .float:
        if T.self == [Float].self { return unsafeBitCast(copy(array, count, Float.self), to: T.self) }
    case .double:
        if T.self == [Double].self { return unsafeBitCast(copy(array, count, Double.self), to: T.self) }
    case .bool:
        if T.self == [Bool].self {
            let values = UnsafeBufferPointer(
                start: array?.assumingMemoryBound(to: protobuf_c_boolean.self), count: count)
            return unsafeBitCast(values.map { $0 != 0 }, to: T.self)
        }
    case .string:
        if T.self == [String].self {
            var strings: [String] = []
            strings.reserveCapacity(count)
            if let array {
                for i in 0..<count {
                    strings.append(try readString(array + i * field.kind.cSize, field: field))
                }
            }
            return unsafeBitCast(strings, to: T.self)
        }
    case .message where field.isMap:
        if let child = field.child, T.self == [String: Int32].self,
            child.fields[0].kind == .string && child.fields[1].kind == .int32
        {
            guard let array else { return unsafeBitCast([String: Int32](), to: T.self) }
            let keyField = child.fields[0]
            let valueField = child.fields[1]
            var map: [String: Int32] = Dictionary(minimumCapacity: count)
            for i in 0..<count {
                let entry = array.load(fromByteOffset: i * 8, as: UnsafeRawPointer.self)
                map[try readString(entry + keyField.offset, field: keyField)] =
                    entry.load(fromByteOffset: valueField.offset, as: Int32.self)
            }
            return unsafeBitCast(map, to: T.self)
        }
    case .message:
        // [Message]: decode the elements directly, without an unkeyed container.
        if let child = field.child, let arrayType = T.self as? any ProtobufRepeatedMessagesReading.Type {
            return try arrayType.readMessages(child: child, array: array, count: count) as! T
        }
    default:
        break
    }
    return try T(from: CMessageReader(plan: field.owner, focus: .repeated(field, base: base)))
}

/// Arrays of messages read without the unkeyed-container machinery.
protocol ProtobufRepeatedMessagesReading {
    static func readMessages(child: MessagePlan, array: UnsafeRawPointer?, count: Int) throws -> Self
}

extension Array: ProtobufRepeatedMessagesReading where Element: Decodable {
    static func readMessages(child: MessagePlan, array: UnsafeRawPointer?, count: Int) throws -> [Element] {
        guard let array, count > 0 else { return [] }
        var result: [Element] = []
        result.reserveCapacity(count)
        for i in 0..<count {
            let message = array.load(fromByteOffset: i * 8, as: UnsafeRawPointer.self)
            do {
                result.append(try Element(from: CMessageReader(plan: child, focus: .message(message))))
            } catch let error as ProtobufBridgeError {
                throw error.within(String(i))
            }
        }
        return result
    }
}

@inline(__always)
private func copy<E>(_ array: UnsafeRawPointer?, _ count: Int, _: E.Type) -> [E] {
    guard let array, count > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: array.assumingMemoryBound(to: E.self), count: count))
}

/// The elements of a repeated field in order; for a map, its entries as alternating keys and
/// values (how `Dictionary` decodes keys that are neither `String` nor `Int`).
struct RepeatedReadContainer: UnkeyedDecodingContainer {
    let plan: MessagePlan
    let field: FieldPlan
    let array: UnsafeRawPointer?
    let elements: Int
    var currentIndex = 0

    init(plan: MessagePlan, field: FieldPlan, base: UnsafeRawPointer) {
        self.plan = plan
        self.field = field
        self.array = base.load(fromByteOffset: field.offset, as: UnsafeRawPointer?.self)
        self.elements = base.load(fromByteOffset: field.quantifierOffset, as: Int.self)
    }

    var codingPath: [any CodingKey] { [] }
    var count: Int? { field.isMap ? elements * 2 : elements }
    var isAtEnd: Bool { currentIndex >= (count ?? 0) }

    /// The plan, field and C address of the current element, advancing past it.
    private mutating func next() throws(ProtobufBridgeError) -> (MessagePlan, FieldPlan, UnsafeRawPointer) {
        guard !isAtEnd, let array else {
            throw ProtobufBridgeError(message: "\(plan.fullName).\(field.protoName): read past the last element")
        }
        defer { currentIndex += 1 }
        if field.isMap, let entryPlan = field.child {
            let entry = array.load(fromByteOffset: (currentIndex / 2) * 8, as: UnsafeRawPointer.self)
            let part = entryPlan.fields[currentIndex % 2]
            return (entryPlan, part, entry + part.offset)
        }
        return (plan, field, array + currentIndex * field.kind.cSize)
    }

    private mutating func scalar<S: CScalar>(_ type: S.Type) throws -> S {
        let (plan, field, address) = try next()
        guard let value = S.read(field.kind, address) else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: [S].self)
        }
        return value
    }

    mutating func decodeNil() throws -> Bool { false }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try scalar(Bool.self) }
    mutating func decode(_ type: String.Type) throws -> String {
        let (plan, field, address) = try next()
        guard field.kind == .string else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: [String].self)
        }
        return try readString(address, field: field)
    }
    mutating func decode(_ type: Double.Type) throws -> Double { try scalar(Double.self) }
    mutating func decode(_ type: Float.Type) throws -> Float { try scalar(Float.self) }
    mutating func decode(_ type: Int.Type) throws -> Int { try scalar(Int.self) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try unsupported(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try unsupported(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try scalar(Int32.self) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try scalar(Int64.self) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try scalar(UInt.self) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try unsupported(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try unsupported(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try scalar(UInt32.self) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try scalar(UInt64.self) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let index = currentIndex
        let (plan, field, address) = try next()
        do {
            return try readValue(T.self, plan: plan, field: field, address: address, present: true)
        } catch let error as ProtobufBridgeError {
            throw error.within(String(index))
        }
    }

    private mutating func unsupported<T>(_ type: T.Type) throws -> T {
        throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: [T].self)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let (plan, field, address) = try next()
        return try CMessageReader(plan: plan, focus: .value(field, address: address, present: true))
            .container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw ProtobufBridgeError(message: "\(plan.fullName).\(field.protoName): protobuf has no nested lists")
    }

    mutating func superDecoder() throws -> any Decoder {
        let (plan, field, address) = try next()
        return CMessageReader(plan: plan, focus: .value(field, address: address, present: true))
    }
}

/// A map field read as a keyed container: each entry's key, spelled as text, is a coding key
/// (how `Dictionary` decodes `String` and `Int` keys).
struct MapReadContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let entryPlan: MessagePlan
    let valueField: FieldPlan
    let entries: [String: UnsafeRawPointer]
    let keys: [String]

    init(plan: MessagePlan, field: FieldPlan, base: UnsafeRawPointer) throws {
        guard let entryPlan = field.child else {
            throw ProtobufBridgeError(message: "\(plan.fullName).\(field.protoName) has no entry descriptor")
        }
        self.entryPlan = entryPlan
        self.valueField = entryPlan.fields[1]
        let keyField = entryPlan.fields[0]
        let count = base.load(fromByteOffset: field.quantifierOffset, as: Int.self)
        let array = base.load(fromByteOffset: field.offset, as: UnsafeRawPointer?.self)
        var entries: [String: UnsafeRawPointer] = [:]
        var keys: [String] = []
        if let array {
            for i in 0..<count {
                let entry = array.load(fromByteOffset: i * 8, as: UnsafeRawPointer.self)
                let address = entry + keyField.offset
                let text: String
                switch keyField.kind {
                case .string: text = try readString(address, field: keyField)
                case .bool: text = Bool.read(.bool, address)! ? "true" : "false"
                case .uint32, .fixed32, .uint64, .fixed64: text = String(UInt64.read(keyField.kind, address)!)
                default:
                    guard let number = Int64.read(keyField.kind, address) else {
                        throw ProtobufBridgeError.typeMismatch(keyField, in: entryPlan, swiftType: Key.self)
                    }
                    text = String(number)
                }
                if entries.updateValue(entry, forKey: text) == nil { keys.append(text) }
            }
        }
        self.entries = entries
        self.keys = keys
    }

    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { keys.compactMap { Key(stringValue: $0) } }
    func contains(_ key: Key) -> Bool { entries[key.stringValue] != nil }

    private func entry(_ key: Key) throws(ProtobufBridgeError) -> UnsafeRawPointer {
        guard let entry = entries[key.stringValue] else {
            throw ProtobufBridgeError(message: "\(entryPlan.fullName): no entry for key \(key.stringValue)")
        }
        return entry
    }

    private func scalar<S: CScalar>(_ type: S.Type, _ key: Key) throws -> S {
        guard let value = S.read(valueField.kind, try entry(key) + valueField.offset) else {
            throw ProtobufBridgeError.typeMismatch(valueField, in: entryPlan, swiftType: S.self)
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { false }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try scalar(Bool.self, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        guard valueField.kind == .string else {
            throw ProtobufBridgeError.typeMismatch(valueField, in: entryPlan, swiftType: type)
        }
        return try readString(try entry(key) + valueField.offset, field: valueField)
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try scalar(Double.self, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try scalar(Float.self, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try scalar(Int.self, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try unsupported(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try unsupported(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try scalar(Int32.self, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try scalar(Int64.self, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try scalar(UInt.self, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try unsupported(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try unsupported(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try scalar(UInt32.self, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try scalar(UInt64.self, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        do {
            return try readValue(
                T.self, plan: entryPlan, field: valueField, address: try entry(key) + valueField.offset, present: true)
        } catch let error as ProtobufBridgeError {
            throw error.within(key.stringValue)
        }
    }

    private func unsupported<T>(_ type: T.Type) throws -> T {
        throw ProtobufBridgeError.typeMismatch(valueField, in: entryPlan, swiftType: type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try CMessageReader(
            plan: entryPlan, focus: .value(valueField, address: try entry(key) + valueField.offset, present: true)
        ).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw ProtobufBridgeError(message: "\(entryPlan.fullName): protobuf has no nested lists")
    }

    func superDecoder() throws -> any Decoder {
        throw ProtobufBridgeError(message: "\(entryPlan.fullName): superDecoder is not supported by protobuf")
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        CMessageReader(
            plan: entryPlan, focus: .value(valueField, address: try entry(key) + valueField.offset, present: true))
    }
}
