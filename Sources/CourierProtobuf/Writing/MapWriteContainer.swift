import CProtobufC
import Foundation

/// A map field written from a keyed container: each coding key's text becomes an entry's key
/// (how `Dictionary` encodes `String` and `Int` keys).
struct MapWriteContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let session: EncodingSession
    let plan: MessagePlan
    let field: FieldPlan
    private var builder: CArrayBuilder

    init(session: EncodingSession, plan: MessagePlan, field: FieldPlan, base: UnsafeMutableRawPointer) {
        self.session = session
        self.plan = plan
        self.field = field
        self.builder = CArrayBuilder(field: field, base: base)
    }

    var codingPath: [any CodingKey] { [] }

    /// A new entry with its key written; returns the entry's plan, value field and value address.
    private mutating func entry(_ key: Key) throws -> (MessagePlan, FieldPlan, UnsafeMutableRawPointer) {
        guard let entryPlan = field.child else {
            throw ProtobufBridgeError(message: "\(plan.fullName).\(field.protoName) has no entry descriptor")
        }
        let entry = session.newMessage(entryPlan)
        builder.append(session).storeBytes(of: entry, as: UnsafeMutableRawPointer.self)
        let keyField = entryPlan.fields[0]
        let text = key.stringValue
        let address = entry + keyField.offset
        switch keyField.kind {
        case .string:
            address.storeBytes(
                of: try session.cString(text, field: keyField), as: UnsafeMutableRawPointer.self)
        case .bool:
            guard let flag = Bool(text) else { throw badKey(text, keyField) }
            try writeScalar(flag, field: keyField, address: address)
        case .uint32, .fixed32, .uint64, .fixed64:
            guard let number = UInt64(text) else { throw badKey(text, keyField) }
            try writeScalar(number, field: keyField, address: address)
        default:
            guard let number = Int64(text) else { throw badKey(text, keyField) }
            try writeScalar(number, field: keyField, address: address)
        }
        let valueField = entryPlan.fields[1]
        return (entryPlan, valueField, entry + valueField.offset)
    }

    private func badKey(_ text: String, _ keyField: FieldPlan) -> ProtobufBridgeError {
        ProtobufBridgeError(
            message: "\(plan.fullName).\(field.protoName): '\(text)' is not a \(keyField.kind.protoName) key")
    }

    private mutating func scalar<S: CScalar>(_ value: S, _ key: Key) throws {
        let (_, field, address) = try entry(key)
        try writeScalar(value, field: field, address: address)
    }
    private func unsupported<T>(_ type: T.Type) throws {
        throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: type)
    }

    mutating func encodeNil(forKey key: Key) throws {
        throw ProtobufBridgeError(message: "\(plan.fullName).\(field.protoName): map values cannot be null")
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: String, forKey key: Key) throws {
        let (plan, field, address) = try entry(key)
        guard field.kind == .string else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: String.self)
        }
        address.storeBytes(of: try session.cString(value, field: field), as: UnsafeMutableRawPointer.self)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try unsupported(Int8.self) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try unsupported(Int16.self) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try unsupported(UInt8.self) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try unsupported(UInt16.self) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let (plan, field, address) = try entry(key)
        do {
            try writeValue(value, session: session, plan: plan, field: field, address: address)
        } catch let error as ProtobufBridgeError {
            throw error.within(key.stringValue)
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        guard let (plan, field, address) = try? entry(key) else {
            return KeyedEncodingContainer(FailingWriteContainer<NestedKey>(error: badKey(key.stringValue, self.field)))
        }
        return CMessageWriter(session: session, plan: plan, focus: .value(field, address: address))
            .container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        FailingWriteContainer<EmptyKey>(
            error: ProtobufBridgeError(message: "\(plan.fullName).\(field.protoName): protobuf has no nested lists"))
    }

    mutating func superEncoder() -> any Encoder {
        CMessageWriter(session: session, plan: plan, focus: .repeated(field, base: builder.base))
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        guard let (plan, field, address) = try? entry(key) else { return superEncoder() }
        return CMessageWriter(session: session, plan: plan, focus: .value(field, address: address))
    }
}
