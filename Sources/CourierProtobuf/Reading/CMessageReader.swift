import CProtobufC
import Foundation

/// Zero bytes standing in for an absent oneof member (oneof members share storage in C).
/// Never written after initialisation, so sharing it between threads is safe.
nonisolated(unsafe) let zeroValue: UnsafeRawPointer = {
    let memory = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
    memory.initializeMemory(as: UInt8.self, repeating: 0, count: 64)
    return UnsafeRawPointer(memory)
}()

/// A `Decoder` over an unpacked protobuf-c message, one field of it, or one element.
///
/// One reader per message (or per value handed to a generic `init(from:)`): the keyed
/// container reads C memory directly, and predicts the next field so that synthesized
/// `init(from:)` finds each key without hashing.
final class CMessageReader: Decoder {
    enum Focus {
        /// A whole message: `base` is the C struct.
        case message(UnsafeRawPointer)
        /// One singular value: `address` is where its C value lives.
        case value(FieldPlan, address: UnsafeRawPointer, present: Bool)
        /// A repeated field (or map) of the message at `base`.
        case repeated(FieldPlan, base: UnsafeRawPointer)
    }

    /// Plans are cached forever: no reference counting needed.
    unowned(unsafe) let plan: MessagePlan
    let focus: Focus
    /// The field the next key most likely names (synthesized coders go in declaration order).
    var cursor = 0

    init(plan: MessagePlan, focus: Focus) {
        self.plan = plan
        self.focus = focus
    }

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        switch focus {
        case .message(let base):
            return KeyedDecodingContainer(MessageReadContainer<Key>(reader: self, base: base))
        case .value(let field, let address, let present) where field.kind == .message:
            guard let child = field.child else {
                throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: Key.self)
            }
            let message = present ? address.load(as: UnsafeRawPointer?.self) : nil
            guard let message else {
                return try DefaultMessage.with(child) { base in
                    KeyedDecodingContainer(
                        MessageReadContainer<Key>(
                            reader: CMessageReader(plan: child, focus: .message(base)), base: base))
                }
            }
            return KeyedDecodingContainer(
                MessageReadContainer<Key>(reader: CMessageReader(plan: child, focus: .message(message)), base: message))
        case .repeated(let field, let base) where field.isMap:
            return KeyedDecodingContainer(try MapReadContainer<Key>(plan: plan, field: field, base: base))
        case .value(let field, _, _), .repeated(let field, _):
            throw ProtobufBridgeError(
                message: "\(plan.fullName).\(field.protoName) is not a message or map; the model reads it as keyed")
        }
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .repeated(let field, let base) = focus else {
            throw ProtobufBridgeError(message: "\(plan.fullName): the model reads a singular field as a list")
        }
        return RepeatedReadContainer(plan: plan, field: field, base: base)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        guard case .value(let field, let address, let present) = focus else {
            throw ProtobufBridgeError(message: "\(plan.fullName): the model reads a message or list as a single value")
        }
        return ValueReadContainer(plan: plan, field: field, address: address, present: present)
    }
}

/// Reads the C value of `field` at `address` as a generic Swift type: fast paths for the
/// common shapes, otherwise the type's own `init(from:)` over a reader focused on the value.
@inline(__always)
func readValue<T: Decodable>(
    _ type: T.Type, plan: MessagePlan, field: FieldPlan, address: UnsafeRawPointer, present: Bool
) throws -> T {
    switch field.kind {
    case .message:
        guard let child = field.child else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: T.self)
        }
        if present, let message = address.load(as: UnsafeRawPointer?.self) {
            return try T(from: CMessageReader(plan: child, focus: .message(message)))
        }
        return try DefaultMessage.with(child) { base in try T(from: CMessageReader(plan: child, focus: .message(base)))
        }
    case .bytes:
        let binary = address.load(as: ProtobufCBinaryData.self)
        if T.self == Data.self {
            return unsafeBitCast(binary.len == 0 ? Data() : Data(bytes: binary.data, count: binary.len), to: T.self)
        }
        if T.self == [UInt8].self {
            return unsafeBitCast(Array(UnsafeBufferPointer(start: binary.data, count: binary.len)), to: T.self)
        }
    case .string:
        if T.self == String.self {
            return unsafeBitCast(try readString(address, field: field), to: T.self)
        }
    case .enumeration:
        if let enumType = T.self as? any ProtobufEnum.Type {
            let raw = address.load(as: Int32.self)
            guard let value = enumType.protobufCase(raw) else {
                throw ProtobufBridgeError(
                    message: "\(plan.fullName).\(field.protoName): \(raw) is not a case of \(T.self)")
            }
            return value as! T
        }
    default:
        break
    }
    return try T(from: CMessageReader(plan: plan, focus: .value(field, address: address, present: present)))
}

/// Reads a C string, rejecting invalid UTF-8 (protobuf-c does not check it).
@inline(__always)
func readString(_ address: UnsafeRawPointer, field: FieldPlan) throws(ProtobufBridgeError)
    -> String
{
    guard let pointer = address.load(as: UnsafePointer<UInt8>?.self) else { return "" }
    return try makeString(pointer, field: field)
}

@inline(__always)
func makeString(_ pointer: UnsafePointer<UInt8>, field: FieldPlan) throws(ProtobufBridgeError)
    -> String
{
    if UnsafeRawPointer(pointer) != field.defaultValue, field.ownerRef._withUnsafeGuaranteedRef({ $0.smallStrings }),
        let string = unpackedSmallString(pointer)
    {
        return string
    }
    guard let string = validString(pointer) else { throw invalidUTF8(field) }
    if isCut(pointer, string, defaultValue: field.defaultValue) { throw embeddedNUL(field) }
    return string
}

/// Whether protobuf-c cut the string at `pointer` short: the wire string had a NUL in it, and
/// the C string ends there. `string` is what the C string holds; a string protobuf-c unpacked
/// was allocated with its wire length + 1 (``Arena/unpackedSize(_:)``). protobuf-c's shared
/// empty string and a proto2 default (`defaultValue`) are static, not unpacked.
@inline(__always)
func isCut(_ pointer: UnsafePointer<UInt8>, _ string: String, defaultValue: UnsafeRawPointer?) -> Bool {
    let raw = UnsafeRawPointer(pointer)
    if raw == UnsafeRawPointer(courier_protobuf_c_empty_string()) || raw == defaultValue { return false }
    return Arena.unpackedSize(raw) != string.utf8.count &+ 1
}

/// The error for a string that protobuf-c cut at a NUL byte.
func embeddedNUL(_ field: FieldPlan) -> ProtobufBridgeError {
    ProtobufBridgeError(
        message: "\(field.owner.fullName).\(field.protoName): the string on the wire contains a NUL byte, which "
            + "protobuf-c cannot carry (its C strings would end there)")
}

/// The string protobuf-c unpacked at `pointer` (into a decode arena, or its shared empty string)
/// when it is short, ASCII and free of NUL bytes: made without `strlen` or UTF-8 validation, from
/// the length the arena recorded (``Arena/unpackedSize(_:)``). Nil for any other string, which
/// the caller reads the general way (``validString(_:)``, ``isCut(_:_:defaultValue:)``).
/// Only when ``SmallString/isAvailable`` (which callers read from their plan's `smallStrings`).
@inline(__always)
func unpackedSmallString(_ pointer: UnsafePointer<UInt8>) -> String? {
    let raw = UnsafeRawPointer(pointer)
    if raw == UnsafeRawPointer(courier_protobuf_c_empty_string()) { return "" }
    let count = Arena.unpackedSize(raw) &- 1  // protobuf-c allocated the wire length + 1
    guard count >= 0 && count <= 15 else { return nil }
    return SmallString.ascii(raw, count: count)
}

/// A Swift string from a C string, or nil when it is not valid UTF-8.
@inline(__always)
func validString(_ pointer: UnsafePointer<UInt8>) -> String? {
    if pointer.pointee == 0 { return "" }
    // Non-generic, validating: nil for invalid UTF-8.
    return String(validatingCString: UnsafeRawPointer(pointer).assumingMemoryBound(to: CChar.self))
}

/// The error for a string field that is not valid UTF-8.
func invalidUTF8(_ field: FieldPlan) -> ProtobufBridgeError {
    ProtobufBridgeError(message: "\(field.owner.fullName).\(field.protoName) is not valid UTF-8")
}

/// A default instance of a message (all fields at their defaults), for a non-optional Swift
/// property whose message field is absent.
enum DefaultMessage {
    static func with<R>(_ plan: MessagePlan, _ body: (UnsafeRawPointer) throws -> R) throws -> R {
        let memory = UnsafeMutableRawPointer.allocate(byteCount: max(plan.sizeofMessage, 1), alignment: 16)
        defer { memory.deallocate() }
        plan.descriptor.pointee.message_init(memory.assumingMemoryBound(to: ProtobufCMessage.self))
        return try body(UnsafeRawPointer(memory))
    }
}

/// The single value of a scalar, string, bytes or enum field (enums' synthesized `init(from:)`).
struct ValueReadContainer: SingleValueDecodingContainer {
    let plan: MessagePlan
    let field: FieldPlan
    let address: UnsafeRawPointer
    let present: Bool

    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { !present }

    private func scalar<S: CScalar>(_ type: S.Type) throws -> S {
        guard let value = S.read(field.kind, address) else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: S.self)
        }
        return value
    }

    func decode(_ type: Bool.Type) throws -> Bool { try scalar(Bool.self) }
    func decode(_ type: String.Type) throws -> String {
        guard field.kind == .string else { throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: type) }
        return try readString(address, field: field)
    }
    func decode(_ type: Double.Type) throws -> Double { try scalar(Double.self) }
    func decode(_ type: Float.Type) throws -> Float { try scalar(Float.self) }
    func decode(_ type: Int.Type) throws -> Int { try scalar(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 {
        throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: type)
    }
    func decode(_ type: Int16.Type) throws -> Int16 {
        throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: type)
    }
    func decode(_ type: Int32.Type) throws -> Int32 { try scalar(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try scalar(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try scalar(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 {
        throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: type)
    }
    func decode(_ type: UInt16.Type) throws -> UInt16 {
        throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: type)
    }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try scalar(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try scalar(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try readValue(T.self, plan: plan, field: field, address: address, present: present)
    }
}
