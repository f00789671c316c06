import CProtobufC
import Foundation

/// An `Encoder` that builds a protobuf-c message in an `EncodingSession`'s arena.
final class CMessageWriter: Encoder {
    enum Focus {
        /// A whole message: `base` is its C struct, already initialised.
        case message(UnsafeMutableRawPointer)
        /// One singular value of `field`, written at `address`.
        case value(FieldPlan, address: UnsafeMutableRawPointer)
        /// A repeated field (or map) of the message at `base`.
        case repeated(FieldPlan, base: UnsafeMutableRawPointer)
    }

    let session: EncodingSession
    /// Plans are cached forever: no reference counting needed.
    unowned(unsafe) let plan: MessagePlan
    let focus: Focus
    /// Required fields written so far (bit per field index, the first 64 fields).
    var requiredSeen: UInt64 = 0
    var cursor = 0

    init(session: EncodingSession, plan: MessagePlan, focus: Focus) {
        self.session = session
        self.plan = plan
        self.focus = focus
    }

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        switch focus {
        case .message(let base):
            return KeyedEncodingContainer(MessageWriteContainer<Key>(writer: self, base: base))
        case .value(let field, let address) where field.kind == .message && field.child != nil:
            let child = field.child!
            let message = session.newMessage(child)
            address.storeBytes(of: UnsafeRawPointer(message), as: UnsafeRawPointer.self)
            let writer = CMessageWriter(session: session, plan: child, focus: .message(message))
            return KeyedEncodingContainer(MessageWriteContainer<Key>(writer: writer, base: message))
        case .repeated(let field, let base) where field.isMap:
            session.addMap(base, field)
            return KeyedEncodingContainer(
                MapWriteContainer<Key>(session: session, plan: plan, field: field, base: base))
        case .value(let field, _), .repeated(let field, _):
            return KeyedEncodingContainer(
                FailingWriteContainer<Key>(
                    error: ProtobufBridgeError(
                        message:
                            "\(plan.fullName).\(field.protoName) is not a message or map; the model writes it as keyed")
                ))
        }
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        guard case .repeated(let field, let base) = focus else {
            return FailingWriteContainer<EmptyKey>(
                error: ProtobufBridgeError(message: "\(plan.fullName): the model writes a singular field as a list"))
        }
        if field.isMap { session.addMap(base, field) }
        return RepeatedWriteContainer(session: session, plan: plan, field: field, base: base)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        guard case .value(let field, let address) = focus else {
            return FailingWriteContainer<EmptyKey>(
                error: ProtobufBridgeError(message: "\(plan.fullName): the model writes a message or list as one value")
            )
        }
        return ValueWriteContainer(session: session, plan: plan, field: field, address: address)
    }

    /// Throws when a required field of the message at `base` was not written.
    func checkRequired(_ base: UnsafeRawPointer) throws(ProtobufBridgeError) {
        try checkRequiredFields(plan, base, seen: requiredSeen)
    }
}

/// Throws when a required field of the message at `base` was not written: strings and
/// messages by their pointer, other kinds by their bit in `seen` (the first 64 fields).
func checkRequiredFields(_ plan: MessagePlan, _ base: UnsafeRawPointer, seen: UInt64) throws(ProtobufBridgeError) {
    for index in plan.requiredFields {
        let field = plan.fields[index]
        let written =
            field.usesPointer
            ? base.load(fromByteOffset: field.offset, as: UnsafeRawPointer?.self) != nil
            : index < 64 && seen & (1 << UInt64(index)) != 0
        if !written {
            throw ProtobufBridgeError(
                message: "\(plan.fullName).\(field.protoName) is required but the model did not set it")
        }
    }
}

struct EmptyKey: CodingKey {
    var stringValue: String { "" }
    var intValue: Int? { nil }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { nil }
}

/// Writes one Swift value of any shape into the C value of `field` at `address`: fast paths
/// for strings, bytes and enums; the value's own `encode(to:)` otherwise.
@inline(__always)
func writeValue<T: Encodable>(
    _ value: T, session: EncodingSession, plan: MessagePlan, field: FieldPlan, address: UnsafeMutableRawPointer
) throws {
    switch field.kind {
    case .message:
        guard let child = field.child else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: T.self)
        }
        let message = session.newMessage(child)
        address.storeBytes(of: UnsafeRawPointer(message), as: UnsafeRawPointer.self)
        let writer = CMessageWriter(session: session, plan: child, focus: .message(message))
        try value.encode(to: writer)
        try writer.checkRequired(message)
        return
    case .string:
        if T.self == String.self {
            let pointer = try session.cString(unsafeBitCast(value, to: String.self), field: field)
            address.storeBytes(of: pointer, as: UnsafeMutableRawPointer.self)
            return
        }
    case .bytes:
        if T.self == Data.self {
            let data = unsafeBitCast(value, to: Data.self)
            address.storeBytes(of: data.withUnsafeBytes { session.binary($0) }, as: ProtobufCBinaryData.self)
            return
        }
        if T.self == [UInt8].self {
            let bytes = unsafeBitCast(value, to: [UInt8].self)
            address.storeBytes(of: bytes.withUnsafeBytes { session.binary($0) }, as: ProtobufCBinaryData.self)
            return
        }
    case .enumeration:
        if let value = value as? any ProtobufEnum {
            address.storeBytes(of: value.rawValue, as: Int32.self)
            return
        }
    default:
        break
    }
    try value.encode(to: CMessageWriter(session: session, plan: plan, focus: .value(field, address: address)))
}

/// Writes a scalar, rejecting values protobuf-c would silently change.
@inline(__always)
func writeScalar<S: CScalar>(_ value: S, field: FieldPlan, address: UnsafeMutableRawPointer)
    throws(ProtobufBridgeError)
{
    if field.presence == .implicit && value.isNegativeZero {
        throw ProtobufBridgeError(
            message: "\(field.owner.fullName).\(field.protoName): -0.0 in a field without presence would be dropped by "
                + "protobuf-c (it packs zero as absent); use 0.0 or make the field `optional`")
    }
    do {
        try S.write(value, field.kind, address)
    } catch .outOfRange {
        throw ProtobufBridgeError(
            message: "\(field.owner.fullName).\(field.protoName): \(value) is out of range for \(field.kind.protoName)")
    } catch {
        throw ProtobufBridgeError.typeMismatch(field, in: field.owner, swiftType: S.self)
    }
}

/// One singular value: what an enum's synthesized `encode(to:)` writes its raw value into.
struct ValueWriteContainer: SingleValueEncodingContainer {
    let session: EncodingSession
    let plan: MessagePlan
    let field: FieldPlan
    let address: UnsafeMutableRawPointer

    var codingPath: [any CodingKey] { [] }

    private func scalar<S: CScalar>(_ value: S) throws {
        try writeScalar(value, field: field, address: address)
    }
    private func unsupported<T>(_ type: T.Type) throws {
        throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: type)
    }

    mutating func encodeNil() throws {
        throw ProtobufBridgeError(message: "\(plan.fullName).\(field.protoName): protobuf has no null")
    }
    mutating func encode(_ value: Bool) throws { try scalar(value) }
    mutating func encode(_ value: String) throws {
        guard field.kind == .string else { return try unsupported(String.self) }
        address.storeBytes(of: try session.cString(value, field: field), as: UnsafeMutableRawPointer.self)
    }
    mutating func encode(_ value: Double) throws { try scalar(value) }
    mutating func encode(_ value: Float) throws { try scalar(value) }
    mutating func encode(_ value: Int) throws { try scalar(value) }
    mutating func encode(_ value: Int8) throws { try unsupported(Int8.self) }
    mutating func encode(_ value: Int16) throws { try unsupported(Int16.self) }
    mutating func encode(_ value: Int32) throws { try scalar(value) }
    mutating func encode(_ value: Int64) throws { try scalar(value) }
    mutating func encode(_ value: UInt) throws { try scalar(value) }
    mutating func encode(_ value: UInt8) throws { try unsupported(UInt8.self) }
    mutating func encode(_ value: UInt16) throws { try unsupported(UInt16.self) }
    mutating func encode(_ value: UInt32) throws { try scalar(value) }
    mutating func encode(_ value: UInt64) throws { try scalar(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try writeValue(value, session: session, plan: plan, field: field, address: address)
    }
}
