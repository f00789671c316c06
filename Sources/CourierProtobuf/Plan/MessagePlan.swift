import CProtobufC
import Courier
import ProtobufNaming
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
///
/// A trivial (POD) value: copying it costs no reference counting. Its names live in the
/// owning plan.
struct FieldPlan: @unchecked Sendable {  // Pointers into static descriptors and immortal plans.
    let descriptor: UnsafePointer<ProtobufCFieldDescriptor>
    /// The plan this field belongs to (plans are cached forever, never freed; unmanaged so
    /// that copying a field costs no reference counting).
    let ownerRef: Unmanaged<MessagePlan>
    let index: Int
    let id: UInt32
    let kind: FieldKind
    let presence: FieldPresence
    let packed: Bool
    let offset: Int
    let quantifierOffset: Int
    let defaultValue: UnsafeRawPointer?
    /// For message fields: the plan of the field's message type.
    fileprivate(set) var childRef: Unmanaged<MessagePlan>?
    /// For repeated message fields whose entry type is a map entry.
    fileprivate(set) var isMap = false

    var usesPointer: Bool { kind == .string || kind == .message }
    var owner: MessagePlan { ownerRef.takeUnretainedValue() }
    var child: MessagePlan? { childRef?.takeUnretainedValue() }
    var protoName: String { owner.protoNames[index] }
    var swiftName: String { owner.swiftNames[index] }
}

/// The field plan of one message descriptor, computed once and cached forever.
///
/// Everything is read from the descriptor in `init`; only the child links of message fields
/// are filled in afterwards, under the cache lock, before the plan is published.
@usableFromInline
final class MessagePlan: @unchecked Sendable {
    let descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    let fullName: String
    let sizeofMessage: Int
    /// Immortal buffers (plans are never freed): reading them needs no exclusivity checks or
    /// reference counting.
    let fields: UnsafeMutableBufferPointer<FieldPlan>
    let protoNames: [String]
    let swiftNames: UnsafeMutableBufferPointer<String>
    let indexBySwiftName: [String: Int]
    /// Indexes of required fields (checked when encoding).
    let requiredFields: [Int]
    /// Whether `requiredFields` is not empty (read by inlined code).
    @usableFromInline let hasRequiredFields: Bool
    /// Field index by field number (-1: none), for the direct path's lookups by number.
    let indexByNumber: UnsafeMutableBufferPointer<Int32>
    /// The direct path's inlined fast paths: one ``FieldSlot`` word per field number (same
    /// range as `indexByNumber`; 0 for numbers without a field or fields only the slow path reads).
    let slots: UnsafeMutableBufferPointer<UInt64>
    /// How deep a message of this type can nest (`Int.max`: a recursive schema).
    let schemaDepth: Int
    /// The types of the singular message fields a message of this type can hold at any depth,
    /// as pairs of a descriptor's address and its `sizeof_message`, for ``SubmessageMerge``
    /// (immortal, like the other buffers).
    let singularMessageTypes: UnsafeBufferPointer<UInt>
    /// ``SmallString/isAvailable``, read here so that the readers' hot path does not go
    /// through the global's once-check per string.
    let smallStrings = SmallString.isAvailable

    private init(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) throws(ProtobufBridgeError) {
        self.descriptor = descriptor
        let fullName = String(cString: descriptor.pointee.name)
        self.fullName = fullName
        self.sizeofMessage = descriptor.pointee.sizeof_message
        self.schemaDepth = NestingLimit.schemaDepth(descriptor)
        let singularMessageTypes = SubmessageMerge.singularMessageTypes(descriptor)
        let watched = UnsafeMutableBufferPointer<UInt>.allocate(capacity: singularMessageTypes.count)
        _ = watched.initialize(from: singularMessageTypes)
        self.singularMessageTypes = UnsafeBufferPointer(watched)
        let count = Int(descriptor.pointee.n_fields)
        var protoNames: [String] = []
        var index: [String: Int] = [:]
        var required: [Int] = []
        let swiftNames = UnsafeMutableBufferPointer<String>.allocate(capacity: count)
        for i in 0..<count {
            let name = String(cString: descriptor.pointee.fields[i].name)
            protoNames.append(name)
            let swiftName = camelCase(name)
            swiftNames.initializeElement(at: i, to: swiftName)
            index[swiftName] = i
            if swiftName != name { index[name] = i }
            if descriptor.pointee.fields[i].label == PROTOBUF_C_LABEL_REQUIRED { required.append(i) }
        }
        self.protoNames = protoNames
        self.swiftNames = swiftNames
        self.indexBySwiftName = index
        self.requiredFields = required
        self.hasRequiredFields = !required.isEmpty
        self.fields = UnsafeMutableBufferPointer<FieldPlan>.allocate(capacity: count)
        // Dense up to the highest number below 4096; higher numbers fall back to a scan.
        var highest = 0
        for i in 0..<count where descriptor.pointee.fields[i].id < 4096 {
            highest = max(highest, Int(descriptor.pointee.fields[i].id))
        }
        self.indexByNumber = UnsafeMutableBufferPointer<Int32>.allocate(capacity: highest + 1)
        indexByNumber.initialize(repeating: -1)
        for i in 0..<count where descriptor.pointee.fields[i].id < 4096 {
            indexByNumber[Int(descriptor.pointee.fields[i].id)] = Int32(i)
        }
        self.slots = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: highest + 1)
        slots.initialize(repeating: 0)
        for i in 0..<count where descriptor.pointee.fields[i].id < 4096 {
            slots[Int(descriptor.pointee.fields[i].id)] = FieldSlot.word(descriptor.pointee.fields[i])
        }
        for i in 0..<count {
            let field = descriptor.pointee.fields.advanced(by: i)
            let f = field.pointee
            guard let kind = FieldKind(f.type) else {
                throw ProtobufBridgeError.invalidDescriptor("\(fullName).\(protoNames[i]): unknown field type")
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
            fields.initializeElement(
                at: i,
                to: FieldPlan(
                    descriptor: field, ownerRef: Unmanaged.passUnretained(self), index: i, id: f.id, kind: kind,
                    presence: presence,
                    packed: f.flags & UInt32(PROTOBUF_C_FIELD_FLAG_PACKED.rawValue) != 0,
                    offset: Int(f.offset), quantifierOffset: Int(f.quantifier_offset),
                    defaultValue: f.default_value))
        }
    }

    /// Finds the field a coding key names: first the predicted next field, then the index.
    @inline(__always)
    func fieldIndex(for name: String, predicted: Int) -> Int? {
        if predicted < swiftNames.count && swiftNames[predicted] == name { return predicted }
        return indexBySwiftName[name]
    }

    /// The index of the field numbered `number`, or nil.
    @inline(__always)
    func fieldIndex(number: Int) -> Int? {
        if number >= 0 && number < indexByNumber.count {
            let index = Int(indexByNumber[number])
            return index >= 0 ? index : nil
        }
        return fields.firstIndex { Int($0.id) == number }
    }

    /// Whether the message is a map entry (`key` = 1, `value` = 2, named `…Entry`).
    var looksLikeMapEntry: Bool {
        fields.count == 2 && protoNames[0] == "key" && fields[0].id == 1
            && protoNames[1] == "value" && fields[1].id == 2 && fullName.hasSuffix("Entry")
    }

    private static let cache = LockedValue<[UInt: MessagePlan]>([:])

    /// A lock-free front for `cache`: plans by a hash of their descriptor's address (0: empty;
    /// a collision just overwrites). Plans are immortal, so a slot holds one unretained.
    private nonisolated(unsafe) static let recent: UnsafeMutablePointer<Atomic<UInt>> = {
        let slots = UnsafeMutablePointer<Atomic<UInt>>.allocate(capacity: recentCount)
        for i in 0..<recentCount { (slots + i).initialize(to: Atomic(0)) }
        return slots
    }()
    private static let recentCount = 64

    /// The plan for `descriptor`, built on first use.
    static func plan(for descriptor: UnsafePointer<ProtobufCMessageDescriptor>) throws(ProtobufBridgeError)
        -> MessagePlan
    {
        let slot = recent + (Int(bitPattern: UInt(bitPattern: descriptor) >> 4) & (recentCount - 1))
        let bits = slot.pointee.load(ordering: .acquiring)
        if bits != 0 {
            let plan = Unmanaged<MessagePlan>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)
            if plan._withUnsafeGuaranteedRef({ $0.descriptor == descriptor }) { return plan.takeUnretainedValue() }
        }
        let plan = try lockedPlan(for: descriptor)
        slot.pointee.store(UInt(bitPattern: Unmanaged.passUnretained(plan).toOpaque()), ordering: .releasing)
        return plan
    }

    private static func lockedPlan(for descriptor: UnsafePointer<ProtobufCMessageDescriptor>)
        throws(ProtobufBridgeError) -> MessagePlan
    {
        // Descriptors are static, immutable C data: handing the pointer to the lock is safe.
        nonisolated(unsafe) let descriptor = descriptor
        let key = UInt(bitPattern: descriptor)
        let result = cache.withLock { (plans) -> Result<MessagePlan, ProtobufBridgeError> in
            if let plan = plans[key] { return .success(plan) }
            do throws(ProtobufBridgeError) {
                var building: [UInt: MessagePlan] = [:]
                let plan = try build(descriptor, existing: plans, into: &building)
                plans.merge(building) { old, _ in old }
                return .success(plan)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Builds the plan of `descriptor` and of every message type it reaches that is not built yet.
    private static func build(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, existing: [UInt: MessagePlan],
        into building: inout [UInt: MessagePlan]
    ) throws(ProtobufBridgeError) -> MessagePlan {
        guard descriptor.pointee.magic == PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC else {
            throw ProtobufBridgeError.invalidDescriptor("not a protobuf-c message descriptor (bad magic)")
        }
        let plan = try MessagePlan(descriptor)
        building[UInt(bitPattern: descriptor)] = plan  // Before the children: messages may recurse.
        for i in plan.fields.indices where plan.fields[i].kind == .message {
            guard let raw = plan.fields[i].descriptor.pointee.descriptor else { continue }
            let key = UInt(bitPattern: raw)
            let child: MessagePlan
            if let known = existing[key] ?? building[key] {
                child = known
            } else {
                child = try build(
                    raw.assumingMemoryBound(to: ProtobufCMessageDescriptor.self), existing: existing, into: &building)
            }
            plan.fields[i].childRef = Unmanaged.passUnretained(child)
            plan.fields[i].isMap = plan.fields[i].presence == .repeated && child.looksLikeMapEntry
        }
        return plan
    }
}
