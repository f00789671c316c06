import CProtobufC

/// The word per field number that the direct path's inlined fast paths read: the field's
/// offset in the C struct (low 32 bits), its storage class (bits 32–39) and flags (bits 40–47).
///
/// A fast path only takes a field whose class is exactly the accessor's and whose flags say the
/// value simply lives at the offset; everything else (oneofs, conversions, presence
/// bookkeeping, errors) goes to the slow path, which reads the full ``FieldPlan``.
@usableFromInline
enum FieldSlot {
    // Storage classes.
    @usableFromInline static let int32: UInt64 = 1  // int32, sint32, sfixed32
    @usableFromInline static let int64: UInt64 = 2  // int64, sint64, sfixed64
    @usableFromInline static let uint32: UInt64 = 3  // uint32, fixed32
    @usableFromInline static let uint64: UInt64 = 4  // uint64, fixed64
    @usableFromInline static let float: UInt64 = 5
    @usableFromInline static let double: UInt64 = 6
    @usableFromInline static let bool: UInt64 = 7
    @usableFromInline static let enumeration: UInt64 = 8
    @usableFromInline static let string: UInt64 = 9

    /// Flag: not repeated and not in a oneof, so the value is at the offset (read fast path).
    @usableFromInline static let readable: UInt64 = 0x100
    /// Flag: proto3 implicit presence, so writing needs no `has_` flag, oneof case or
    /// required bit (write fast path).
    @usableFromInline static let writable: UInt64 = 0x200

    /// The offset of the field numbered `number` if its slot is `class` with all of `flags`.
    @inlinable @inline(__always)
    static func offset(
        _ slots: UnsafeMutableBufferPointer<UInt64>, _ number: Int, _ storageClass: UInt64, _ flags: UInt64
    ) -> Int? {
        guard UInt(bitPattern: number) < UInt(bitPattern: slots.count) else { return nil }
        let word = slots.baseAddress.unsafelyUnwrapped[number]
        guard (word >> 32) & (0xFF | flags) == storageClass | flags else { return nil }
        return Int(truncatingIfNeeded: UInt32(truncatingIfNeeded: word))
    }

    /// The slot word of a field (0 when no fast path applies).
    static func word(_ field: ProtobufCFieldDescriptor) -> UInt64 {
        let storageClass: UInt64
        switch field.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32: storageClass = int32
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64: storageClass = int64
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32: storageClass = uint32
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64: storageClass = uint64
        case PROTOBUF_C_TYPE_FLOAT: storageClass = float
        case PROTOBUF_C_TYPE_DOUBLE: storageClass = double
        case PROTOBUF_C_TYPE_BOOL: storageClass = bool
        case PROTOBUF_C_TYPE_ENUM: storageClass = enumeration
        case PROTOBUF_C_TYPE_STRING:
            // A proto2 default is a static C string, not one protobuf-c unpacked: the slow path.
            // (proto3 strings name protobuf-c's shared empty string as their default.)
            if let value = field.default_value, value != UnsafeRawPointer(courier_protobuf_c_empty_string()) {
                return 0
            }
            storageClass = string
        default: return 0
        }
        let oneof = field.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0
        var flags: UInt64 = 0
        if !oneof && field.label != PROTOBUF_C_LABEL_REPEATED { flags |= readable }
        if !oneof && field.label == PROTOBUF_C_LABEL_NONE { flags |= writable }
        return (storageClass | flags) << 32 | UInt64(field.offset)
    }
}
