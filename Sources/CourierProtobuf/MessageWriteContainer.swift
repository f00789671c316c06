import CProtobufC
import Foundation

/// The keyed container of one message being built: each key is a field, written straight
/// into the C struct, with its presence (`has_` flag, oneof case) set alongside.
struct MessageWriteContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: CMessageWriter
    let base: UnsafeMutableRawPointer

    var codingPath: [any CodingKey] { [] }

    @inline(__always)
    private func field(_ key: Key) throws(ProtobufBridgeError) -> FieldPlan {
        let plan = writer.plan
        let name = key.stringValue
        guard let index = plan.fieldIndex(for: name, predicted: writer.cursor) else {
            throw ProtobufBridgeError.missingField(name, in: plan)
        }
        writer.cursor = index + 1
        let field = plan.fields[index]
        switch field.presence {
        case .implicit, .repeated:
            break
        case .optional:
            if !field.usesPointer {
                base.storeBytes(of: 1, toByteOffset: field.quantifierOffset, as: protobuf_c_boolean.self)
            }
        case .oneof:
            let current = base.load(fromByteOffset: field.quantifierOffset, as: UInt32.self)
            if current != 0 && current != field.id {
                let other = plan.fields.first { $0.id == current }?.swiftName ?? "field \(current)"
                throw ProtobufBridgeError(
                    message:
                        "\(plan.fullName): '\(other)' and '\(field.swiftName)' belong to the same oneof; set only one")
            }
            base.storeBytes(of: field.id, toByteOffset: field.quantifierOffset, as: UInt32.self)
        case .required:
            if index < 64 { writer.requiredSeen |= 1 << UInt64(index) }
        }
        return field
    }

    @inline(__always)
    private mutating func scalar<S: CScalar>(_ value: S, _ key: Key) throws {
        let field = try field(key)
        guard field.presence != .repeated else {
            throw ProtobufBridgeError.typeMismatch(field, in: writer.plan, swiftType: S.self)
        }
        try writeScalar(value, plan: writer.plan, field: field, address: base + field.offset)
    }

    private mutating func unsupported<T>(_ type: T.Type, _ key: Key) throws {
        throw ProtobufBridgeError.typeMismatch(try field(key), in: writer.plan, swiftType: type)
    }

    mutating func encodeNil(forKey key: Key) throws {}
    mutating func encode(_ value: Bool, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try scalar(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try unsupported(Int8.self, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try unsupported(Int16.self, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try unsupported(UInt8.self, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try unsupported(UInt16.self, key) }

    mutating func encode(_ value: String, forKey key: Key) throws {
        let field = try field(key)
        guard field.kind == .string, field.presence != .repeated else {
            throw ProtobufBridgeError.typeMismatch(field, in: writer.plan, swiftType: String.self)
        }
        if value.isEmpty && field.presence == .implicit { return }  // message_init left "" there.
        let pointer = try writer.session.cString(value, plan: writer.plan, field: field)
        base.storeBytes(of: pointer, toByteOffset: field.offset, as: UnsafeMutableRawPointer.self)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let field = try field(key)
        do {
            if field.presence == .repeated {
                try writeRepeated(value, session: writer.session, plan: writer.plan, field: field, base: base)
            } else {
                try writeValue(
                    value, session: writer.session, plan: writer.plan, field: field, address: base + field.offset)
            }
        } catch let error as ProtobufBridgeError {
            throw error.within(field.swiftName)
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        superWriter(key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        superWriter(key).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        CMessageWriter(session: writer.session, plan: writer.plan, focus: .message(base))
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder { superWriter(key) }

    private func superWriter(_ key: Key) -> CMessageWriter {
        guard let field = try? field(key) else {
            return CMessageWriter(session: writer.session, plan: writer.plan, focus: .message(base))
        }
        let focus: CMessageWriter.Focus =
            field.presence == .repeated ? .repeated(field, base: base) : .value(field, address: base + field.offset)
        return CMessageWriter(session: writer.session, plan: writer.plan, focus: focus)
    }
}
