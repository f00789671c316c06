import CProtobufC
import Foundation

/// Reads the fields of one decoded protobuf-c message by field number, for
/// ``ProtobufDirectCodable`` models.
///
/// Absent fields read as their defaults (zero, empty, the proto2 default); ``has(_:)`` tells
/// presence for fields that track it. A number the message does not define, or a getter of the
/// wrong kind, throws an error naming the field.
public struct ProtobufMessageReader {
    // Four words, so that readers stay in registers. The plan (immortal) is held unmanaged and
    // its slots as a buffer: reading a field costs no reference counting.
    @usableFromInline let slots: UnsafeMutableBufferPointer<UInt64>
    let planRef: Unmanaged<MessagePlan>
    @usableFromInline let base: UnsafeRawPointer

    init(plan: MessagePlan, base: UnsafeRawPointer) {
        self.slots = plan.slots
        self.planRef = Unmanaged.passUnretained(plan)
        self.base = base
    }

    /// The plan's fields and field indexes by number (immortal buffers).
    private var fields: UnsafeMutableBufferPointer<FieldPlan> { planRef._withUnsafeGuaranteedRef { $0.fields } }
    private var numbers: UnsafeMutableBufferPointer<Int32> { planRef._withUnsafeGuaranteedRef { $0.indexByNumber } }

    @usableFromInline
    init(planRef: Unmanaged<MessagePlan>, base: UnsafeRawPointer) {
        self = planRef._withUnsafeGuaranteedRef { ProtobufMessageReader(plan: $0, base: base) }
    }

    /// The offset of a field the inlined fast path can read as `storageClass`.
    @inlinable @inline(__always)
    func fastOffset(_ number: Int, _ storageClass: UInt64) -> Int? {
        FieldSlot.offset(slots, number, storageClass, FieldSlot.readable)
    }

    /// For error messages only.
    var plan: MessagePlan { planRef.takeUnretainedValue() }

    @inline(__always)
    private func field(_ number: Int) throws(ProtobufBridgeError) -> FieldPlan {
        if number >= 0 && number < numbers.count {
            let index = Int(numbers[number])
            if index >= 0 { return fields[index] }
        }
        guard let index = plan.fieldIndex(number: number) else {
            throw ProtobufBridgeError(message: "\(plan.fullName) has no field number \(number)")
        }
        return plan.fields[index]
    }

    @inline(__always)
    private func scalar<S: CScalar>(_ number: Int, _ type: S.Type) throws(ProtobufBridgeError) -> S {
        let field = try field(number)
        let present = field.presence == .oneof ? field.isPresent(in: base) : true
        guard field.presence != .repeated, let value = S.read(field.kind, field.address(in: base, present: present))
        else { throw ProtobufBridgeError.typeMismatch(field, in: field.owner, swiftType: S.self) }
        return value
    }

    @inline(__always)
    private func repeated<T: Decodable>(_ number: Int, _ type: T.Type) throws -> T {
        let field = try field(number)
        guard field.presence == .repeated else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: T.self)
        }
        return try readRepeated(T.self, field: field, base: base)
    }

    /// Whether the field holds a value: set in a oneof, a proto2 `optional` or proto3 `optional`
    /// field that was sent, a message that is there, a repeated field with elements. Fields
    /// without presence (proto3 scalars) are always present.
    public func has(_ number: Int) throws -> Bool { try field(number).isPresent(in: base) }

    // The scalar getters: an inlined load when the field's slot matches, the general path
    // (conversions, oneofs, errors) otherwise.
    /// The `int32`, `sint32` or `sfixed32` field numbered `number`.
    @inlinable public func int32(_ number: Int) throws -> Int32 {
        if let offset = fastOffset(number, FieldSlot.int32) { return base.load(fromByteOffset: offset, as: Int32.self) }
        return try slowInt32(number)
    }
    /// The `int64`, `sint64` or `sfixed64` field numbered `number`.
    @inlinable public func int64(_ number: Int) throws -> Int64 {
        if let offset = fastOffset(number, FieldSlot.int64) { return base.load(fromByteOffset: offset, as: Int64.self) }
        return try slowInt64(number)
    }
    /// The `uint32` or `fixed32` field numbered `number`.
    @inlinable public func uint32(_ number: Int) throws -> UInt32 {
        if let offset = fastOffset(number, FieldSlot.uint32) {
            return base.load(fromByteOffset: offset, as: UInt32.self)
        }
        return try slowUInt32(number)
    }
    /// The `uint64` or `fixed64` field numbered `number`.
    @inlinable public func uint64(_ number: Int) throws -> UInt64 {
        if let offset = fastOffset(number, FieldSlot.uint64) {
            return base.load(fromByteOffset: offset, as: UInt64.self)
        }
        return try slowUInt64(number)
    }
    /// The `float` field numbered `number`.
    @inlinable public func float(_ number: Int) throws -> Float {
        if let offset = fastOffset(number, FieldSlot.float) { return base.load(fromByteOffset: offset, as: Float.self) }
        return try slowFloat(number)
    }
    /// The `double` field numbered `number`.
    @inlinable public func double(_ number: Int) throws -> Double {
        if let offset = fastOffset(number, FieldSlot.double) {
            return base.load(fromByteOffset: offset, as: Double.self)
        }
        return try slowDouble(number)
    }
    /// The `bool` field numbered `number`.
    @inlinable public func bool(_ number: Int) throws -> Bool {
        if let offset = fastOffset(number, FieldSlot.bool) {
            return base.load(fromByteOffset: offset, as: Int32.self) != 0
        }
        return try slowBool(number)
    }

    @usableFromInline func slowInt32(_ number: Int) throws -> Int32 { try scalar(number, Int32.self) }
    @usableFromInline func slowInt64(_ number: Int) throws -> Int64 { try scalar(number, Int64.self) }
    @usableFromInline func slowUInt32(_ number: Int) throws -> UInt32 { try scalar(number, UInt32.self) }
    @usableFromInline func slowUInt64(_ number: Int) throws -> UInt64 { try scalar(number, UInt64.self) }
    @usableFromInline func slowFloat(_ number: Int) throws -> Float { try scalar(number, Float.self) }
    @usableFromInline func slowDouble(_ number: Int) throws -> Double { try scalar(number, Double.self) }
    @usableFromInline func slowBool(_ number: Int) throws -> Bool { try scalar(number, Bool.self) }

    /// A string field. - Throws: when it is not valid UTF-8.
    @inlinable public func string(_ number: Int) throws -> String {
        if let offset = fastOffset(number, FieldSlot.string) {
            guard let pointer = base.load(fromByteOffset: offset, as: UnsafePointer<UInt8>?.self) else { return "" }
            return try makeString(pointer, number: number)
        }
        return try slowString(number)
    }

    /// A Swift string from protobuf-c's C string, or an error naming the field.
    @usableFromInline func makeString(_ pointer: UnsafePointer<UInt8>, number: Int) throws -> String {
        if planRef._withUnsafeGuaranteedRef({ $0.smallStrings }), let string = unpackedSmallString(pointer) {
            return string
        }
        guard let string = validString(pointer) else { throw invalidUTF8(try field(number)) }
        // The fast path reads proto3 implicit-presence strings only: no proto2 default.
        if isCut(pointer, string, defaultValue: nil) { throw embeddedNUL(try field(number)) }
        return string
    }

    @usableFromInline func slowString(_ number: Int) throws -> String {
        let field = try field(number)
        guard field.kind == .string, field.presence != .repeated else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: String.self)
        }
        if field.presence == .oneof && !field.isPresent(in: base) { return "" }
        return try readString(base + field.offset, field: field)
    }

    /// A bytes field.
    public func bytes(_ number: Int) throws -> Data {
        let field = try field(number)
        guard field.kind == .bytes, field.presence != .repeated else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: Data.self)
        }
        let present = field.presence == .oneof ? field.isPresent(in: base) : true
        let binary = field.address(in: base, present: present).load(as: ProtobufCBinaryData.self)
        return binary.len == 0 ? Data() : Data(bytes: binary.data, count: binary.len)
    }

    /// An enum field. - Throws: for a number `E` does not know and has no fallback for.
    @inlinable
    public func enumeration<E: ProtobufEnum>(_ number: Int, as type: E.Type = E.self) throws -> E {
        let raw: Int32
        if let offset = fastOffset(number, FieldSlot.enumeration) {
            raw = base.load(fromByteOffset: offset, as: Int32.self)
        } else {
            raw = try slowInt32(number)
        }
        if let value = E(rawValue: raw) { return value }
        return try unrecognized(number, raw, E.self)
    }

    /// The fallback case for a number `E` does not know, or the error naming the field.
    @usableFromInline func unrecognized<E: ProtobufEnum>(_ number: Int, _ raw: Int32, _ type: E.Type) throws -> E {
        guard let value = E.unrecognized else {
            throw ProtobufBridgeError(
                message: "\(plan.fullName).\(try field(number).protoName): \(raw) is not a case of \(E.self)")
        }
        return value
    }

    /// A message field, or nil when it is absent.
    @inlinable
    public func message<M: ProtobufDirectCodable>(_ number: Int, as type: M.Type = M.self) throws -> M? {
        guard let reader = try messageReader(number, M.self) else { return nil }
        do {
            return try M(protobuf: reader)
        } catch {
            throw wrapping(error, number)
        }
    }

    /// A reader of the message field numbered `number`, nil when absent.
    @usableFromInline func messageReader(_ number: Int, _ type: Any.Type) throws -> ProtobufMessageReader? {
        let field = try field(number)
        guard field.kind == .message, field.presence != .repeated, let child = field.childRef else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: type)
        }
        guard field.isPresent(in: base), let message = (base + field.offset).load(as: UnsafeRawPointer?.self) else {
            return nil
        }
        return ProtobufMessageReader(planRef: child, base: message)
    }

    /// `error` from inside the message field numbered `number`, with the field prepended.
    @usableFromInline func wrapping(_ error: any Error, _ number: Int) -> any Error {
        guard let field = try? field(number) else { return error }
        return ProtobufBridgeError.wrapping(error, plan: plan, field: field)
    }

    /// The repeated `int32`, `sint32` or `sfixed32` field numbered `number`.
    public func int32s(_ number: Int) throws -> [Int32] { try repeated(number, [Int32].self) }
    /// The repeated `int64`, `sint64` or `sfixed64` field numbered `number`.
    public func int64s(_ number: Int) throws -> [Int64] { try repeated(number, [Int64].self) }
    /// The repeated `uint32` or `fixed32` field numbered `number`.
    public func uint32s(_ number: Int) throws -> [UInt32] { try repeated(number, [UInt32].self) }
    /// The repeated `uint64` or `fixed64` field numbered `number`.
    public func uint64s(_ number: Int) throws -> [UInt64] { try repeated(number, [UInt64].self) }
    /// The repeated `float` field numbered `number`.
    public func floats(_ number: Int) throws -> [Float] { try repeated(number, [Float].self) }
    /// The repeated `double` field numbered `number`.
    public func doubles(_ number: Int) throws -> [Double] { try repeated(number, [Double].self) }
    /// The repeated `bool` field numbered `number`.
    public func bools(_ number: Int) throws -> [Bool] { try repeated(number, [Bool].self) }
    /// A repeated string field. - Throws: when a string is not valid UTF-8.
    public func strings(_ number: Int) throws -> [String] {
        let field = try field(number)
        guard field.kind == .string, field.presence == .repeated else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: [String].self)
        }
        let count = base.load(fromByteOffset: field.quantifierOffset, as: Int.self)
        guard count > 0, let array = base.load(fromByteOffset: field.offset, as: UnsafeRawPointer?.self) else {
            return []
        }
        let smallStrings = planRef._withUnsafeGuaranteedRef { $0.smallStrings }
        var strings: [String] = []
        strings.reserveCapacity(count)
        for i in 0..<count {
            let pointer = array.load(fromByteOffset: i &* 8, as: UnsafePointer<UInt8>?.self)
            guard let pointer else {
                strings.append("")
                continue
            }
            if smallStrings, let string = unpackedSmallString(pointer) {
                strings.append(string)
                continue
            }
            guard let string = validString(pointer) else { throw invalidUTF8(field) }
            if isCut(pointer, string, defaultValue: nil) { throw embeddedNUL(field) }
            strings.append(string)
        }
        return strings
    }
    /// A repeated bytes field.
    public func bytesList(_ number: Int) throws -> [Data] { try repeated(number, [Data].self) }
    /// A `map<string, int32>` field.
    public func stringInt32Map(_ number: Int) throws -> [String: Int32] { try repeated(number, [String: Int32].self) }

    /// A repeated enum field.
    public func enumerations<E: ProtobufEnum>(_ number: Int, as type: E.Type = E.self) throws -> [E] {
        try int32s(number).map { raw in
            guard let value = E.protobufCase(raw) else {
                throw ProtobufBridgeError(message: "\(plan.fullName): \(raw) is not a case of \(E.self)")
            }
            return value
        }
    }

    /// A repeated message field.
    @inlinable
    public func messages<M: ProtobufDirectCodable>(_ number: Int, as type: M.Type = M.self) throws -> [M] {
        let (child, array, count) = try repeatedMessages(number, [M].self)
        guard let array else { return [] }
        var result: [M] = []
        result.reserveCapacity(count)
        for i in 0..<count {
            let message = array.load(fromByteOffset: i &* 8, as: UnsafeRawPointer.self)
            do {
                result.append(try M(protobuf: ProtobufMessageReader(planRef: child, base: message)))
            } catch {
                throw elementError(error, number, i)
            }
        }
        return result
    }

    /// The element plan, array and count of the repeated message field numbered `number`
    /// (a nil array when empty).
    @usableFromInline func repeatedMessages(_ number: Int, _ type: Any.Type) throws -> (
        Unmanaged<MessagePlan>, UnsafeRawPointer?, Int
    ) {
        let field = try field(number)
        guard field.kind == .message, field.presence == .repeated, let child = field.childRef else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: type)
        }
        let count = base.load(fromByteOffset: field.quantifierOffset, as: Int.self)
        let array = base.load(fromByteOffset: field.offset, as: UnsafeRawPointer?.self)
        return (child, count > 0 ? array : nil, count)
    }

    /// `error` from element `index` of the repeated field numbered `number`, with its path.
    @usableFromInline func elementError(_ error: any Error, _ number: Int, _ index: Int) -> any Error {
        guard let field = try? field(number) else { return error }
        if let error = error as? ProtobufBridgeError { return error.within(String(index)).within(field.swiftName) }
        return ProtobufBridgeError(
            message: "\(plan.fullName).\(field.protoName): \(error)", path: [field.swiftName, String(index)])
    }

    /// A map field of any key and value type: `key` and `value` read fields 1 and 2 of each entry.
    public func map<K: Hashable, V>(
        _ number: Int, key: (ProtobufMessageReader) throws -> K, value: (ProtobufMessageReader) throws -> V
    ) throws -> [K: V] {
        var result: [K: V] = [:]
        for entry in try elements(number, { $0 }) { result[try key(entry)] = try value(entry) }
        return result
    }

    private func elements<T>(_ number: Int, _ read: (ProtobufMessageReader) throws -> T) throws -> [T] {
        let field = try field(number)
        guard field.kind == .message, field.presence == .repeated, let child = field.childRef else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: [T].self)
        }
        let count = base.load(fromByteOffset: field.quantifierOffset, as: Int.self)
        guard count > 0, let array = base.load(fromByteOffset: field.offset, as: UnsafeRawPointer?.self) else {
            return []
        }
        var result: [T] = []
        result.reserveCapacity(count)
        for i in 0..<count {
            let message = array.load(fromByteOffset: i * 8, as: UnsafeRawPointer.self)
            do {
                result.append(try read(ProtobufMessageReader(planRef: child, base: message)))
            } catch let error as ProtobufBridgeError {
                throw error.within(String(i)).within(field.swiftName)
            } catch {
                throw ProtobufBridgeError(
                    message: "\(plan.fullName).\(field.protoName): \(error)", path: [field.swiftName, String(i)])
            }
        }
        return result
    }
}
