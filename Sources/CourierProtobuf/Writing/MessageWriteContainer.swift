import CProtobufC
import Foundation

/// The keyed container of one message being built: each key is a field, written straight
/// into the C struct, with its presence (`has_` flag, oneof case) set alongside.
struct MessageWriteContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: CMessageWriter
    let base: UnsafeMutableRawPointer

    var codingPath: [any CodingKey] { [] }

    @inline(__always)
    private func field(_ key: Key) throws(ProtobufBridgeError) -> (Int, FieldPlan) {
        let plan = writer.plan
        let name = key.stringValue
        guard let index = plan.fieldIndex(for: name, predicted: writer.cursor) else {
            throw ProtobufBridgeError.missingField(name, in: plan)
        }
        writer.cursor = index + 1
        return (index, plan.fields[index])
    }

    /// Records that the field was written: its `has_` flag, oneof case or required bit.
    ///
    /// A proto2 `optional` field written through `encode` (a non-optional Swift property) is
    /// marked present only when it differs from its default, mirroring decoding, where an
    /// absent field reads as its default; `encodeIfPresent` (an Optional property that is not
    /// nil) always marks it present.
    @inline(__always)
    private func markWritten(_ index: Int, _ field: FieldPlan, explicit: Bool) throws(ProtobufBridgeError) {
        try markFieldWritten(field, in: base, explicit: explicit, requiredSeen: &writer.requiredSeen)
    }

    @inline(__always)
    private mutating func scalar<S: CScalar>(_ value: S, _ key: Key, explicit: Bool = false) throws {
        let (index, field) = try field(key)
        guard field.presence != .repeated else {
            throw ProtobufBridgeError.typeMismatch(field, in: writer.plan, swiftType: S.self)
        }
        try writeScalar(value, field: field, address: base + field.offset)
        try markWritten(index, field, explicit: explicit)
    }

    private mutating func unsupported<T>(_ type: T.Type, _ key: Key) throws {
        throw ProtobufBridgeError.typeMismatch(try field(key).1, in: writer.plan, swiftType: type)
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
    mutating func encode(_ value: String, forKey key: Key) throws { try string(value, key, explicit: false) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try any(value, key, explicit: false) }

    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
        if let value { try scalar(value, key, explicit: true) }
    }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
        if let value { try scalar(value, key, explicit: true) }
    }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws {
        if let value { try scalar(value, key, explicit: true) }
    }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
        if let value { try scalar(value, key, explicit: true) }
    }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws {
        if let value { try scalar(value, key, explicit: true) }
    }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
        if let value { try scalar(value, key, explicit: true) }
    }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws {
        if let value { try scalar(value, key, explicit: true) }
    }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws {
        if let value { try scalar(value, key, explicit: true) }
    }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws {
        if let value { try scalar(value, key, explicit: true) }
    }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
        if let value { try string(value, key, explicit: true) }
    }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try any(value, key, explicit: true) }
    }

    private mutating func string(_ value: String, _ key: Key, explicit: Bool) throws {
        let (index, field) = try field(key)
        guard field.kind == .string, field.presence != .repeated else {
            throw ProtobufBridgeError.typeMismatch(field, in: writer.plan, swiftType: String.self)
        }
        try markWritten(index, field, explicit: explicit)
        switch field.presence {
        case .implicit where value.isEmpty:
            return  // message_init left "" there.
        case .optional where !explicit:
            // A non-optional property holding the default means "absent", as when decoding.
            let fallback = field.defaultValue?.assumingMemoryBound(to: CChar.self)
            if value == (fallback.map { String(cString: $0) } ?? "") { return }
        default:
            break
        }
        let pointer = try writer.session.cString(value, field: field)
        base.storeBytes(of: pointer, toByteOffset: field.offset, as: UnsafeMutableRawPointer.self)
    }

    private mutating func any<T: Encodable>(_ value: T, _ key: Key, explicit: Bool) throws {
        let (index, field) = try field(key)
        do {
            if field.presence == .repeated {
                try writeRepeated(value, session: writer.session, field: field, base: base)
            } else {
                try writeValue(
                    value, session: writer.session, plan: writer.plan, field: field, address: base + field.offset)
                try markWritten(index, field, explicit: explicit)
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
        guard let (_, field) = try? field(key) else {
            return CMessageWriter(session: writer.session, plan: writer.plan, focus: .message(base))
        }
        let focus: CMessageWriter.Focus =
            field.presence == .repeated ? .repeated(field, base: base) : .value(field, address: base + field.offset)
        return CMessageWriter(session: writer.session, plan: writer.plan, focus: focus)
    }
}

/// Records that `field` was written: its `has_` flag, oneof case or required bit.
///
/// A proto2 `optional` field written through `encode` (a non-optional Swift property) is
/// marked present only when it differs from its default, mirroring decoding, where an absent
/// field reads as its default; `encodeIfPresent` (an Optional property that is not nil) and the
/// direct path always mark it present (`explicit`).
@inline(__always)
func markFieldWritten(
    _ field: FieldPlan, in base: UnsafeMutableRawPointer, explicit: Bool, requiredSeen: inout UInt64
) throws(ProtobufBridgeError) {
    switch field.presence {
    case .implicit, .repeated:
        break
    case .optional:
        if field.usesPointer { break }
        let present = explicit || differsFromDefault(field, base)
        base.storeBytes(of: present ? 1 : 0, toByteOffset: field.quantifierOffset, as: protobuf_c_boolean.self)
    case .oneof:
        let current = base.load(fromByteOffset: field.quantifierOffset, as: UInt32.self)
        if current != 0 && current != field.id {
            let plan = field.owner
            let other = plan.fields.first { $0.id == current }?.swiftName ?? "field \(current)"
            throw ProtobufBridgeError(
                message: "\(plan.fullName): '\(other)' and '\(field.swiftName)' belong to the same oneof; set only one")
        }
        base.storeBytes(of: field.id, toByteOffset: field.quantifierOffset, as: UInt32.self)
    case .required:
        if field.index < 64 { requiredSeen |= 1 << UInt64(field.index) }
    }
}

private func differsFromDefault(_ field: FieldPlan, _ base: UnsafeMutableRawPointer) -> Bool {
    let value = UnsafeRawPointer(base + field.offset)
    let fallback = field.defaultValue ?? zeroValue
    if field.kind == .bytes {
        let a = value.load(as: ProtobufCBinaryData.self)
        let b = fallback.load(as: ProtobufCBinaryData.self)
        return a.len != b.len || (a.len > 0 && memcmp(a.data, b.data, a.len) != 0)
    }
    return memcmp(value, fallback, field.kind.cSize) != 0
}
