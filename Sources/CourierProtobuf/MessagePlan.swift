import CProtobufC
import Synchronization

/// The kind of a protobuf field, flattened from `ProtobufCType` for fast switching.
enum FieldKind: UInt8, Sendable {
    case int32, sint32, sfixed32, int64, sint64, sfixed64
    case uint32, fixed32, uint64, fixed64
    case float, double, bool, enumeration, string, bytes, message

    init?(_ type: ProtobufCType) {
        switch type {
        case PROTOBUF_C_TYPE_INT32: self = .int32
        case PROTOBUF_C_TYPE_SINT32: self = .sint32
        case PROTOBUF_C_TYPE_SFIXED32: self = .sfixed32
        case PROTOBUF_C_TYPE_INT64: self = .int64
        case PROTOBUF_C_TYPE_SINT64: self = .sint64
        case PROTOBUF_C_TYPE_SFIXED64: self = .sfixed64
        case PROTOBUF_C_TYPE_UINT32: self = .uint32
        case PROTOBUF_C_TYPE_FIXED32: self = .fixed32
        case PROTOBUF_C_TYPE_UINT64: self = .uint64
        case PROTOBUF_C_TYPE_FIXED64: self = .fixed64
        case PROTOBUF_C_TYPE_FLOAT: self = .float
        case PROTOBUF_C_TYPE_DOUBLE: self = .double
        case PROTOBUF_C_TYPE_BOOL: self = .bool
        case PROTOBUF_C_TYPE_ENUM: self = .enumeration
        case PROTOBUF_C_TYPE_STRING: self = .string
        case PROTOBUF_C_TYPE_BYTES: self = .bytes
        case PROTOBUF_C_TYPE_MESSAGE: self = .message
        default: return nil
        }
    }

    /// The size of one value in the C struct (a repeated field's element stride).
    var cSize: Int {
        switch self {
        case .int32, .sint32, .sfixed32, .uint32, .fixed32, .float, .bool, .enumeration: 4
        case .int64, .sint64, .sfixed64, .uint64, .fixed64, .double: 8
        case .string, .message: MemoryLayout<UnsafeRawPointer>.size
        case .bytes: MemoryLayout<ProtobufCBinaryData>.size
        }
    }

    /// The proto spelling, for error messages.
    var protoName: String {
        switch self {
        case .enumeration: "enum"
        default: "\(self)"
        }
    }
}

/// How a field records presence in the C struct.
enum FieldPresence: UInt8, Sendable {
    /// proto3 implicit presence: always a value, zero when absent.
    case implicit
    /// proto2 `optional`: a `has_` flag (scalars) or a non-NULL pointer (strings, messages).
    case optional
    /// proto2 `required`.
    case required
    /// A member of a oneof (including proto3 `optional`): the case field names the member.
    case oneof
    /// `repeated`: a count at the quantifier offset and an array pointer at the offset.
    case repeated
}

/// One field of a message, with everything the hot path needs read out of the descriptor once.
struct FieldPlan: @unchecked Sendable {  // Holds pointers into static, immutable descriptors.
    let descriptor: UnsafePointer<ProtobufCFieldDescriptor>
    let protoName: String
    let swiftName: String
    let id: UInt32
    let kind: FieldKind
    let presence: FieldPresence
    let packed: Bool
    let offset: Int
    let quantifierOffset: Int
    let defaultValue: UnsafeRawPointer?
    /// For message fields: the plan of the field's message type.
    let child: MessagePlan?
    /// For repeated message fields whose entry type looks like a map entry.
    let isMap: Bool

    var usesPointer: Bool { kind == .string || kind == .message }
}

/// The field plan of one message descriptor, computed once and shared.
///
/// Built under the cache lock before it is published, and never mutated afterwards.
final class MessagePlan: @unchecked Sendable {
    let descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    let fullName: String
    private(set) var fields: [FieldPlan] = []
    private(set) var indexBySwiftName: [String: Int] = [:]
    /// Indexes of required fields (checked when encoding).
    private(set) var requiredFields: [Int] = []
    let sizeofMessage: Int

    private init(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) {
        self.descriptor = descriptor
        self.fullName = String(cString: descriptor.pointee.name)
        self.sizeofMessage = descriptor.pointee.sizeof_message
    }

    /// Finds the field a coding key names: first the predicted next field, then the index.
    @inline(__always)
    func fieldIndex(for name: String, predicted: Int) -> Int? {
        if predicted < fields.count && fields[predicted].swiftName == name { return predicted }
        return indexBySwiftName[name]
    }

    /// Whether the message is a map entry (`key` = 1, `value` = 2, named `…Entry`).
    var looksLikeMapEntry: Bool {
        fields.count == 2 && fields[0].protoName == "key" && fields[0].id == 1
            && fields[1].protoName == "value" && fields[1].id == 2 && fullName.hasSuffix("Entry")
    }

    private static let cache = Mutex<[UInt: MessagePlan]>([:])

    /// The plan for `descriptor`, built on first use.
    static func plan(for descriptor: UnsafePointer<ProtobufCMessageDescriptor>) throws(ProtobufBridgeError)
        -> MessagePlan
    {
        // Descriptors are static, immutable C data: handing the pointer to the lock is safe.
        nonisolated(unsafe) let descriptor = descriptor
        let key = UInt(bitPattern: descriptor)
        let result = cache.withLock { (plans) -> Result<MessagePlan, ProtobufBridgeError> in
            if let plan = plans[key] { return .success(plan) }
            do throws(ProtobufBridgeError) {
                return .success(try build(descriptor, into: &plans))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private static func build(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, into plans: inout [UInt: MessagePlan]
    ) throws(ProtobufBridgeError) -> MessagePlan {
        guard descriptor.pointee.magic == PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC else {
            throw ProtobufBridgeError.invalidDescriptor("not a protobuf-c message descriptor (bad magic)")
        }
        let plan = MessagePlan(descriptor)
        plans[UInt(bitPattern: descriptor)] = plan  // Before the children: messages may recurse.
        let count = Int(descriptor.pointee.n_fields)
        var fields: [FieldPlan] = []
        fields.reserveCapacity(count)
        for i in 0..<count {
            let field = descriptor.pointee.fields.advanced(by: i)
            let f = field.pointee
            let protoName = String(cString: f.name)
            guard let kind = FieldKind(f.type) else {
                throw ProtobufBridgeError.invalidDescriptor("\(plan.fullName).\(protoName): unknown field type")
            }
            let presence: FieldPresence
            if f.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0 {
                presence = .oneof
            } else {
                switch f.label {
                case PROTOBUF_C_LABEL_REQUIRED: presence = .required
                case PROTOBUF_C_LABEL_OPTIONAL: presence = .optional
                case PROTOBUF_C_LABEL_REPEATED: presence = .repeated
                default: presence = .implicit
                }
            }
            var child: MessagePlan?
            if kind == .message, let raw = f.descriptor {
                let childDescriptor = raw.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
                if let existing = plans[UInt(bitPattern: raw)] {
                    child = existing
                } else {
                    child = try build(childDescriptor, into: &plans)
                }
            }
            fields.append(
                FieldPlan(
                    descriptor: field, protoName: protoName, swiftName: camelCase(protoName), id: f.id,
                    kind: kind, presence: presence,
                    packed: f.flags & UInt32(PROTOBUF_C_FIELD_FLAG_PACKED.rawValue) != 0,
                    offset: Int(f.offset), quantifierOffset: Int(f.quantifier_offset),
                    defaultValue: f.default_value, child: child,
                    isMap: f.label == PROTOBUF_C_LABEL_REPEATED && (child?.looksLikeMapEntry ?? false)))
        }
        plan.fields = fields
        for (i, field) in fields.enumerated() {
            plan.indexBySwiftName[field.swiftName] = i
            if field.swiftName != field.protoName { plan.indexBySwiftName[field.protoName] = i }
            if field.presence == .required { plan.requiredFields.append(i) }
        }
        return plan
    }
}

/// `snake_case` → `camelCase`, as Swift properties are usually spelled (`user_id` → `userId`).
func camelCase(_ name: String) -> String {
    guard name.contains("_") else { return name }
    var result = ""
    var upperNext = false
    for character in name {
        if character == "_" {
            upperNext = !result.isEmpty
            continue
        }
        if upperNext {
            result += character.uppercased()
            upperNext = false
        } else {
            result.append(character)
        }
    }
    return result
}
