import CProtobufC
import Foundation

extension FieldPlan {
    /// Whether the field holds a value in the message at `base`.
    @inline(__always)
    func isPresent(in base: UnsafeRawPointer) -> Bool {
        switch presence {
        case .implicit, .required:
            return kind != .message || base.load(fromByteOffset: offset, as: UnsafeRawPointer?.self) != nil
        case .optional:
            if usesPointer {
                let pointer = base.load(fromByteOffset: offset, as: UnsafeRawPointer?.self)
                return pointer != nil && pointer != defaultValue
            }
            return base.load(fromByteOffset: quantifierOffset, as: protobuf_c_boolean.self) != 0
        case .oneof:
            return base.load(fromByteOffset: quantifierOffset, as: UInt32.self) == id
        case .repeated:
            return base.load(fromByteOffset: quantifierOffset, as: Int.self) != 0
        }
    }

    /// Where the field's C value is, or the zero value for an absent oneof member.
    @inline(__always)
    func address(in base: UnsafeRawPointer, present: Bool) -> UnsafeRawPointer {
        presence == .oneof && !present ? zeroValue : base + offset
    }
}

/// The keyed container of one message: each key is a field, read straight from C memory.
struct MessageReadContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let reader: CMessageReader
    let base: UnsafeRawPointer

    var codingPath: [any CodingKey] { [] }

    var allKeys: [Key] {
        reader.plan.fields.compactMap { field in field.isPresent(in: base) ? Key(stringValue: field.swiftName) : nil }
    }

    @inline(__always)
    private func field(_ key: Key) throws(ProtobufBridgeError) -> FieldPlan {
        let plan = reader.plan
        let name = key.stringValue
        guard let index = plan.fieldIndex(for: name, predicted: reader.cursor) else {
            throw ProtobufBridgeError.missingField(name, in: plan)
        }
        reader.cursor = index + 1
        return plan.fields[index]
    }

    func contains(_ key: Key) -> Bool {
        guard let index = reader.plan.fieldIndex(for: key.stringValue, predicted: reader.cursor) else { return false }
        return reader.plan.fields[index].isPresent(in: base)
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        !(try field(key).isPresent(in: base))
    }

    @inline(__always)
    private func scalar<S: CScalar>(_ type: S.Type, _ key: Key) throws -> S {
        let field = try field(key)
        let present = field.presence == .oneof ? field.isPresent(in: base) : true
        guard field.presence != .repeated, let value = S.read(field.kind, field.address(in: base, present: present))
        else { throw ProtobufBridgeError.typeMismatch(field, in: reader.plan, swiftType: S.self) }
        return value
    }

    @inline(__always)
    private func scalarIfPresent<S: CScalar>(_ type: S.Type, _ key: Key) throws -> S? {
        let field = try field(key)
        guard field.presence != .repeated else {
            throw ProtobufBridgeError.typeMismatch(field, in: reader.plan, swiftType: S?.self)
        }
        guard field.isPresent(in: base) else { return nil }
        guard let value = S.read(field.kind, base + field.offset) else {
            throw ProtobufBridgeError.typeMismatch(field, in: reader.plan, swiftType: S?.self)
        }
        return value
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try scalar(Bool.self, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try scalar(Double.self, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try scalar(Float.self, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try scalar(Int.self, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try scalar(Int32.self, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try scalar(Int64.self, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try scalar(UInt.self, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try scalar(UInt32.self, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try scalar(UInt64.self, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try unsupported(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try unsupported(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try unsupported(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try unsupported(type, key) }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        let field = try field(key)
        guard field.kind == .string, field.presence != .repeated else {
            throw ProtobufBridgeError.typeMismatch(field, in: reader.plan, swiftType: type)
        }
        if field.presence == .oneof && !field.isPresent(in: base) { return "" }
        return try readString(base + field.offset, field: field)
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let field = try field(key)
        do {
            if field.presence == .repeated {
                return try readRepeated(T.self, field: field, base: base)
            }
            let present = field.isPresent(in: base)
            return try readValue(
                T.self, plan: reader.plan, field: field, address: field.address(in: base, present: present),
                present: present)
        } catch {
            throw ProtobufBridgeError.wrapping(error, plan: reader.plan, field: field)
        }
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try scalarIfPresent(Bool.self, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try scalarIfPresent(Double.self, key)
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try scalarIfPresent(Float.self, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try scalarIfPresent(Int.self, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try scalarIfPresent(Int32.self, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try scalarIfPresent(Int64.self, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try scalarIfPresent(UInt.self, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try scalarIfPresent(UInt32.self, key)
    }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try scalarIfPresent(UInt64.self, key)
    }

    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        let field = try field(key)
        guard field.kind == .string, field.presence != .repeated else {
            throw ProtobufBridgeError.typeMismatch(field, in: reader.plan, swiftType: type)
        }
        guard field.isPresent(in: base) else { return nil }
        return try readString(base + field.offset, field: field)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        let field = try field(key)
        guard field.isPresent(in: base) else { return nil }
        do {
            if field.presence == .repeated {
                return try readRepeated(T.self, field: field, base: base)
            }
            return try readValue(T.self, plan: reader.plan, field: field, address: base + field.offset, present: true)
        } catch {
            throw ProtobufBridgeError.wrapping(error, plan: reader.plan, field: field)
        }
    }

    private func unsupported<T>(_ type: T.Type, _ key: Key) throws -> T {
        throw ProtobufBridgeError.typeMismatch(try field(key), in: reader.plan, swiftType: type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let field = try field(key)
        let present = field.isPresent(in: base)
        let focus: CMessageReader.Focus =
            field.presence == .repeated
            ? .repeated(field, base: base)
            : .value(field, address: field.address(in: base, present: present), present: present)
        return try CMessageReader(plan: reader.plan, focus: focus).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let field = try field(key)
        return try CMessageReader(plan: reader.plan, focus: .repeated(field, base: base)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        throw ProtobufBridgeError(message: "\(reader.plan.fullName): superDecoder is not supported by protobuf")
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        let field = try field(key)
        let present = field.isPresent(in: base)
        let focus: CMessageReader.Focus =
            field.presence == .repeated
            ? .repeated(field, base: base)
            : .value(field, address: field.address(in: base, present: present), present: present)
        return CMessageReader(plan: reader.plan, focus: focus)
    }
}
