import CProtobufC

/// A Swift scalar type the bridge reads from and writes to protobuf-c's C representation.
///
/// `read` returns nil when the Swift type cannot hold the field's kind (a model/descriptor
/// mismatch); `write` throws `CScalarWriteError` for a mismatch or a value out of range.
protocol CScalar {
    static func read(_ kind: FieldKind, _ address: UnsafeRawPointer) -> Self?
    static func write(_ value: Self, _ kind: FieldKind, _ address: UnsafeMutableRawPointer) throws(CScalarWriteError)
    /// Whether this value is what protobuf-c treats as "absent" in an implicit-presence field
    /// while still being a distinct value (-0.0), which would be dropped silently.
    var isNegativeZero: Bool { get }
}

enum CScalarWriteError: Error {
    case mismatch
    case outOfRange
}

extension CScalar {
    var isNegativeZero: Bool { false }
}

@inline(__always)
private func load<T>(_ address: UnsafeRawPointer, _: T.Type) -> T { address.loadUnaligned(as: T.self) }

@inline(__always)
private func store<T>(_ value: T, _ address: UnsafeMutableRawPointer) { address.storeBytes(of: value, as: T.self) }

extension Int32: CScalar {
    @inline(__always)
    static func read(_ kind: FieldKind, _ address: UnsafeRawPointer) -> Int32? {
        switch kind {
        case .int32, .sint32, .sfixed32, .enumeration: load(address, Int32.self)
        default: nil
        }
    }
    @inline(__always)
    static func write(_ value: Int32, _ kind: FieldKind, _ address: UnsafeMutableRawPointer) throws(CScalarWriteError) {
        switch kind {
        case .int32, .sint32, .sfixed32, .enumeration: store(value, address)
        default: throw .mismatch
        }
    }
}

extension Int64: CScalar {
    @inline(__always)
    static func read(_ kind: FieldKind, _ address: UnsafeRawPointer) -> Int64? {
        switch kind {
        case .int64, .sint64, .sfixed64: load(address, Int64.self)
        case .int32, .sint32, .sfixed32, .enumeration: Int64(load(address, Int32.self))
        case .uint32, .fixed32: Int64(load(address, UInt32.self))
        default: nil
        }
    }
    @inline(__always)
    static func write(_ value: Int64, _ kind: FieldKind, _ address: UnsafeMutableRawPointer) throws(CScalarWriteError) {
        switch kind {
        case .int64, .sint64, .sfixed64: store(value, address)
        case .int32, .sint32, .sfixed32, .enumeration:
            guard let narrow = Int32(exactly: value) else { throw .outOfRange }
            store(narrow, address)
        case .uint32, .fixed32:
            guard let narrow = UInt32(exactly: value) else { throw .outOfRange }
            store(narrow, address)
        default: throw .mismatch
        }
    }
}

extension Int: CScalar {
    @inline(__always)
    static func read(_ kind: FieldKind, _ address: UnsafeRawPointer) -> Int? {
        Int64.read(kind, address).map { Int($0) }
    }
    @inline(__always)
    static func write(_ value: Int, _ kind: FieldKind, _ address: UnsafeMutableRawPointer) throws(CScalarWriteError) {
        try Int64.write(Int64(value), kind, address)
    }
}

extension UInt32: CScalar {
    @inline(__always)
    static func read(_ kind: FieldKind, _ address: UnsafeRawPointer) -> UInt32? {
        switch kind {
        case .uint32, .fixed32: load(address, UInt32.self)
        default: nil
        }
    }
    @inline(__always)
    static func write(_ value: UInt32, _ kind: FieldKind, _ address: UnsafeMutableRawPointer) throws(CScalarWriteError)
    {
        switch kind {
        case .uint32, .fixed32: store(value, address)
        default: throw .mismatch
        }
    }
}

extension UInt64: CScalar {
    @inline(__always)
    static func read(_ kind: FieldKind, _ address: UnsafeRawPointer) -> UInt64? {
        switch kind {
        case .uint64, .fixed64: load(address, UInt64.self)
        case .uint32, .fixed32: UInt64(load(address, UInt32.self))
        default: nil
        }
    }
    @inline(__always)
    static func write(_ value: UInt64, _ kind: FieldKind, _ address: UnsafeMutableRawPointer) throws(CScalarWriteError)
    {
        switch kind {
        case .uint64, .fixed64: store(value, address)
        case .uint32, .fixed32:
            guard let narrow = UInt32(exactly: value) else { throw .outOfRange }
            store(narrow, address)
        default: throw .mismatch
        }
    }
}

extension UInt: CScalar {
    @inline(__always)
    static func read(_ kind: FieldKind, _ address: UnsafeRawPointer) -> UInt? {
        UInt64.read(kind, address).map { UInt($0) }
    }
    @inline(__always)
    static func write(_ value: UInt, _ kind: FieldKind, _ address: UnsafeMutableRawPointer) throws(CScalarWriteError) {
        try UInt64.write(UInt64(value), kind, address)
    }
}

extension Float: CScalar {
    @inline(__always)
    static func read(_ kind: FieldKind, _ address: UnsafeRawPointer) -> Float? {
        kind == .float ? load(address, Float.self) : nil
    }
    @inline(__always)
    static func write(_ value: Float, _ kind: FieldKind, _ address: UnsafeMutableRawPointer) throws(CScalarWriteError) {
        guard kind == .float else { throw .mismatch }
        store(value, address)
    }
    var isNegativeZero: Bool { self == 0 && sign == .minus }
}

extension Double: CScalar {
    @inline(__always)
    static func read(_ kind: FieldKind, _ address: UnsafeRawPointer) -> Double? {
        switch kind {
        case .double: load(address, Double.self)
        case .float: Double(load(address, Float.self))
        default: nil
        }
    }
    @inline(__always)
    static func write(_ value: Double, _ kind: FieldKind, _ address: UnsafeMutableRawPointer) throws(CScalarWriteError)
    {
        guard kind == .double else { throw .mismatch }
        store(value, address)
    }
    var isNegativeZero: Bool { self == 0 && sign == .minus }
}

extension Bool: CScalar {
    @inline(__always)
    static func read(_ kind: FieldKind, _ address: UnsafeRawPointer) -> Bool? {
        kind == .bool ? load(address, protobuf_c_boolean.self) != 0 : nil
    }
    @inline(__always)
    static func write(_ value: Bool, _ kind: FieldKind, _ address: UnsafeMutableRawPointer) throws(CScalarWriteError) {
        guard kind == .bool else { throw .mismatch }
        store(protobuf_c_boolean(value ? 1 : 0), address)
    }
}
