import CProtobufC
import Foundation

/// Writes the fields of one protobuf-c message being built, by field number, for
/// ``ProtobufDirectCodable`` models.
///
/// Setting a field marks it present (its `has_` flag, its oneof case); leave a field alone to
/// keep it absent. Setting two members of one oneof, a NUL inside a string, `-0.0` in a field
/// without presence or a number out of range throws.
public struct ProtobufMessageWriter {
    /// The arena of the message being built (a plain value; `ProtobufEncoder` releases it).
    @usableFromInline let session: EncodingSession
    // Six words. The plan (immortal) is held unmanaged and its slots as a buffer: writing a
    // field costs no reference counting.
    @usableFromInline let slots: UnsafeMutableBufferPointer<UInt64>
    @usableFromInline let planRef: Unmanaged<MessagePlan>
    @usableFromInline let base: UnsafeMutableRawPointer
    @usableFromInline var requiredSeen: UInt64 = 0

    init(session: EncodingSession, plan: MessagePlan, base: UnsafeMutableRawPointer) {
        self.session = session
        self.slots = plan.slots
        self.planRef = Unmanaged.passUnretained(plan)
        self.base = base
    }

    /// The plan's fields and field indexes by number (immortal buffers).
    private var fields: UnsafeMutableBufferPointer<FieldPlan> { planRef._withUnsafeGuaranteedRef { $0.fields } }
    private var numbers: UnsafeMutableBufferPointer<Int32> { planRef._withUnsafeGuaranteedRef { $0.indexByNumber } }

    @usableFromInline
    init(session: EncodingSession, planRef: Unmanaged<MessagePlan>, base: UnsafeMutableRawPointer) {
        self = planRef._withUnsafeGuaranteedRef { ProtobufMessageWriter(session: session, plan: $0, base: base) }
    }

    /// The offset of a proto3 implicit-presence field the inlined fast path can write as
    /// `storageClass` (no presence bookkeeping needed).
    @inlinable @inline(__always)
    func fastOffset(_ number: Int, _ storageClass: UInt64) -> Int? {
        FieldSlot.offset(slots, number, storageClass, FieldSlot.writable)
    }

    /// For error messages only.
    var plan: MessagePlan { planRef.takeUnretainedValue() }

    /// The field numbered `number`, marked as written.
    @inline(__always)
    private mutating func field(_ number: Int, repeated: Bool = false) throws(ProtobufBridgeError) -> FieldPlan {
        var found: Int? = nil
        if number >= 0 && number < numbers.count && numbers[number] >= 0 {
            found = Int(numbers[number])
        } else {
            found = plan.fieldIndex(number: number)
        }
        guard let index = found else {
            throw ProtobufBridgeError(message: "\(plan.fullName) has no field number \(number)")
        }
        let field = fields[index]
        if repeated != (field.presence == .repeated) {
            throw ProtobufBridgeError(
                message: "\(plan.fullName).\(field.protoName) is \(repeated ? "not " : "")a repeated field")
        }
        try markFieldWritten(field, in: base, explicit: true, requiredSeen: &requiredSeen)
        return field
    }

    @inline(__always)
    private mutating func scalar<S: CScalar>(_ number: Int, _ value: S) throws(ProtobufBridgeError) {
        let field = try field(number)
        try writeScalar(value, field: field, address: base + field.offset)
    }

    @inline(__always)
    private mutating func repeated<T: Encodable>(_ number: Int, _ values: T) throws {
        let field = try field(number, repeated: true)
        try writeRepeated(values, session: session, field: field, base: base)
    }

    // The scalar setters: an inlined store for proto3 implicit-presence fields whose slot
    // matches, the general path (presence, conversions, range and -0.0 checks, errors) otherwise.
    /// Sets the `int32`, `sint32` or `sfixed32` field numbered `number`.
    @inlinable public mutating func setInt32(_ number: Int, _ value: Int32) throws {
        if let offset = fastOffset(number, FieldSlot.int32) {
            return base.storeBytes(of: value, toByteOffset: offset, as: Int32.self)
        }
        try slowSetInt32(number, value)
    }
    /// Sets the `int64`, `sint64` or `sfixed64` field numbered `number`.
    @inlinable public mutating func setInt64(_ number: Int, _ value: Int64) throws {
        if let offset = fastOffset(number, FieldSlot.int64) {
            return base.storeBytes(of: value, toByteOffset: offset, as: Int64.self)
        }
        try slowSetInt64(number, value)
    }
    /// Sets the `uint32` or `fixed32` field numbered `number`.
    @inlinable public mutating func setUInt32(_ number: Int, _ value: UInt32) throws {
        if let offset = fastOffset(number, FieldSlot.uint32) {
            return base.storeBytes(of: value, toByteOffset: offset, as: UInt32.self)
        }
        try slowSetUInt32(number, value)
    }
    /// Sets the `uint64` or `fixed64` field numbered `number`.
    @inlinable public mutating func setUInt64(_ number: Int, _ value: UInt64) throws {
        if let offset = fastOffset(number, FieldSlot.uint64) {
            return base.storeBytes(of: value, toByteOffset: offset, as: UInt64.self)
        }
        try slowSetUInt64(number, value)
    }
    /// Sets the `float` field numbered `number`. Throws for `-0.0` in a field without presence.
    @inlinable public mutating func setFloat(_ number: Int, _ value: Float) throws {
        // -0.0 takes the slow path, which rejects it for fields without presence.
        if value.bitPattern != (-0.0 as Float).bitPattern, let offset = fastOffset(number, FieldSlot.float) {
            return base.storeBytes(of: value, toByteOffset: offset, as: Float.self)
        }
        try slowSetFloat(number, value)
    }
    /// Sets the `double` field numbered `number`. Throws for `-0.0` in a field without presence.
    @inlinable public mutating func setDouble(_ number: Int, _ value: Double) throws {
        if value.bitPattern != (-0.0 as Double).bitPattern, let offset = fastOffset(number, FieldSlot.double) {
            return base.storeBytes(of: value, toByteOffset: offset, as: Double.self)
        }
        try slowSetDouble(number, value)
    }
    /// Sets the `bool` field numbered `number`.
    @inlinable public mutating func setBool(_ number: Int, _ value: Bool) throws {
        if let offset = fastOffset(number, FieldSlot.bool) {
            return base.storeBytes(of: value ? 1 : 0, toByteOffset: offset, as: Int32.self)
        }
        try slowSetBool(number, value)
    }

    @usableFromInline mutating func slowSetInt32(_ number: Int, _ value: Int32) throws { try scalar(number, value) }
    @usableFromInline mutating func slowSetInt64(_ number: Int, _ value: Int64) throws { try scalar(number, value) }
    @usableFromInline mutating func slowSetUInt32(_ number: Int, _ value: UInt32) throws { try scalar(number, value) }
    @usableFromInline mutating func slowSetUInt64(_ number: Int, _ value: UInt64) throws { try scalar(number, value) }
    @usableFromInline mutating func slowSetFloat(_ number: Int, _ value: Float) throws { try scalar(number, value) }
    @usableFromInline mutating func slowSetDouble(_ number: Int, _ value: Double) throws { try scalar(number, value) }
    @usableFromInline mutating func slowSetBool(_ number: Int, _ value: Bool) throws { try scalar(number, value) }

    /// Sets a string field. - Throws: for a string with an embedded NUL.
    @inlinable public mutating func setString(_ number: Int, _ value: String) throws {
        if let offset = fastOffset(number, FieldSlot.string) {
            if value.isEmpty { return }  // message_init left "" there.
            return try storeString(value, offset: offset, number: number)
        }
        try slowSetString(number, value)
    }

    /// Stores an arena copy of `value` at `offset`.
    @usableFromInline func storeString(_ value: String, offset: Int, number: Int) throws {
        guard let pointer = session.cStringIfValid(value) else {
            throw session.embeddedNULError(fields[Int(numbers[number])])
        }
        base.storeBytes(of: pointer, toByteOffset: offset, as: UnsafeMutableRawPointer.self)
    }

    @usableFromInline mutating func slowSetString(_ number: Int, _ value: String) throws {
        let field = try field(number)
        guard field.kind == .string else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: String.self)
        }
        if value.isEmpty && field.presence == .implicit { return }  // message_init left "" there.
        (base + field.offset).storeBytes(
            of: try session.cString(value, field: field), as: UnsafeMutableRawPointer.self)
    }

    /// Sets a bytes field.
    public mutating func setBytes(_ number: Int, _ value: Data) throws {
        let field = try field(number)
        guard field.kind == .bytes else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: Data.self)
        }
        (base + field.offset).storeBytes(of: value.withUnsafeBytes { session.binary($0) }, as: ProtobufCBinaryData.self)
    }

    /// Sets an enum field to the case's raw value.
    @inlinable
    public mutating func setEnumeration<E: ProtobufEnum>(_ number: Int, _ value: E) throws {
        if let offset = fastOffset(number, FieldSlot.enumeration) {
            return base.storeBytes(of: value.rawValue, toByteOffset: offset, as: Int32.self)
        }
        try slowSetInt32(number, value.rawValue)
    }

    /// Sets a message field when `value` is not nil (nil leaves it absent).
    ///
    /// Takes the Optional itself: `if let value = model.field { … }` would copy the whole
    /// sub-message (a retain per string, array and nested message in it) before writing it.
    @inlinable
    public mutating func setMessage<M: ProtobufDirectCodable>(_ number: Int, _ value: M?) throws {
        guard let value else { return }
        try setMessage(number, value)
    }

    /// Sets a message field.
    @inlinable
    public mutating func setMessage<M: ProtobufDirectCodable>(_ number: Int, _ value: M) throws {
        var writer = try messageWriter(number, M.self)
        do {
            try value.write(protobuf: &writer)
            try writer.checkRequired()
        } catch {
            throw wrapping(error, number)
        }
    }

    /// A writer for a new message stored in the message field numbered `number`.
    @usableFromInline mutating func messageWriter(_ number: Int, _ type: Any.Type) throws -> ProtobufMessageWriter {
        let field = try field(number)
        guard field.kind == .message, let child = field.child else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: type)
        }
        let message = session.newMessage(child)
        (base + field.offset).storeBytes(of: message, as: UnsafeMutableRawPointer.self)
        return ProtobufMessageWriter(session: session, plan: child, base: message)
    }

    /// Throws when a required field of this message was not written.
    @inlinable func checkRequired() throws {
        if planRef._withUnsafeGuaranteedRef({ $0.hasRequiredFields }) { try checkRequiredSlow() }
    }

    @usableFromInline func checkRequiredSlow() throws {
        try checkRequiredFields(plan, base, seen: requiredSeen)
    }

    /// `error` from inside the message field numbered `number`, with the field prepended.
    @usableFromInline func wrapping(_ error: any Error, _ number: Int) -> any Error {
        guard let index = plan.fieldIndex(number: number) else { return error }
        return ProtobufBridgeError.wrapping(error, plan: plan, field: fields[index])
    }

    /// Sets the repeated `int32`, `sint32` or `sfixed32` field numbered `number`.
    public mutating func setInt32s(_ number: Int, _ values: [Int32]) throws { try repeated(number, values) }
    /// Sets the repeated `int64`, `sint64` or `sfixed64` field numbered `number`.
    public mutating func setInt64s(_ number: Int, _ values: [Int64]) throws { try repeated(number, values) }
    /// Sets the repeated `uint32` or `fixed32` field numbered `number`.
    public mutating func setUInt32s(_ number: Int, _ values: [UInt32]) throws { try repeated(number, values) }
    /// Sets the repeated `uint64` or `fixed64` field numbered `number`.
    public mutating func setUInt64s(_ number: Int, _ values: [UInt64]) throws { try repeated(number, values) }
    /// Sets the repeated `float` field numbered `number`.
    public mutating func setFloats(_ number: Int, _ values: [Float]) throws { try repeated(number, values) }
    /// Sets the repeated `double` field numbered `number`.
    public mutating func setDoubles(_ number: Int, _ values: [Double]) throws { try repeated(number, values) }
    /// Sets the repeated `bool` field numbered `number`.
    public mutating func setBools(_ number: Int, _ values: [Bool]) throws { try repeated(number, values) }
    /// Sets a repeated string field. - Throws: for a string with an embedded NUL.
    public mutating func setStrings(_ number: Int, _ values: [String]) throws {
        let field = try field(number, repeated: true)
        guard field.kind == .string else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: [String].self)
        }
        let count = values.count
        if count == 0 { return }  // message_init left no elements.
        let array = session.allocate(count &* 8)
        // Borrow the elements: no copy (and no reference counting) per string.
        try values.withUnsafeBufferPointer { strings in
            let first = strings.baseAddress.unsafelyUnwrapped
            let smallStrings = session.arena.smallStrings
            for i in 0..<count {
                let copy: UnsafeMutableRawPointer?
                if smallStrings, let small = SmallString.utf8(at: first + i) {
                    copy = SmallString.cString(small) { session.allocate($0) }  // read in place, not copied
                } else {
                    copy = session.cStringIfValid(first[i])
                }
                guard let pointer = copy else { throw session.embeddedNULError(field) }
                array.storeBytes(of: pointer, toByteOffset: i &* 8, as: UnsafeMutableRawPointer.self)
            }
        }
        base.storeBytes(of: count, toByteOffset: field.quantifierOffset, as: Int.self)
        base.storeBytes(of: array, toByteOffset: field.offset, as: UnsafeMutableRawPointer.self)
    }
    /// Sets a repeated bytes field.
    public mutating func setBytesList(_ number: Int, _ values: [Data]) throws { try repeated(number, values) }
    /// Sets a `map<string, int32>` field (entries sorted by key when packed).
    public mutating func setStringInt32Map(_ number: Int, _ values: [String: Int32]) throws {
        try repeated(number, values)
    }

    /// Sets a repeated enum field.
    public mutating func setEnumerations<E: ProtobufEnum>(_ number: Int, _ values: [E]) throws {
        try repeated(number, values.map(\.rawValue))
    }

    /// Sets a repeated message field.
    @inlinable
    public mutating func setMessages<M: ProtobufDirectCodable>(_ number: Int, _ values: [M]) throws {
        let count = values.count
        let (child, array) = try beginMessages(number, count: count, [M].self)
        // Borrow the elements: copying one would retain each of its arrays and strings. (Swift
        // 6.3 still copies each element for the call to `write`, by either subscript: callgrind
        // shows `initializeWithCopy` per element, about 110 instructions; Docs/Performance.md.)
        try values.withUnsafeBufferPointer { elements in
            let first = elements.baseAddress.unsafelyUnwrapped
            for i in 0..<count {
                var writer = newElement(child, array, i)
                do {
                    try first[i].write(protobuf: &writer)
                    try writer.checkRequired()
                } catch {
                    throw elementError(error, number, i)
                }
            }
        }
    }

    /// Stores an array of `count` message pointers and the count in the repeated message field
    /// numbered `number`.
    @usableFromInline mutating func beginMessages(_ number: Int, count: Int, _ type: Any.Type) throws -> (
        Unmanaged<MessagePlan>, UnsafeMutableRawPointer
    ) {
        let field = try field(number, repeated: true)
        guard field.kind == .message, let child = field.childRef else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: type)
        }
        let array = session.allocate(count * 8)
        base.storeBytes(of: count, toByteOffset: field.quantifierOffset, as: Int.self)
        base.storeBytes(of: array, toByteOffset: field.offset, as: UnsafeMutableRawPointer.self)
        return (child, array)
    }

    /// A writer for a new message stored as element `index` of `array`.
    @usableFromInline func newElement(_ child: Unmanaged<MessagePlan>, _ array: UnsafeMutableRawPointer, _ index: Int)
        -> ProtobufMessageWriter
    {
        child._withUnsafeGuaranteedRef { plan in
            let message = session.newMessage(plan)
            array.storeBytes(of: message, toByteOffset: index * 8, as: UnsafeMutableRawPointer.self)
            return ProtobufMessageWriter(session: session, plan: plan, base: message)
        }
    }

    /// `error` from element `index` of the repeated field numbered `number`, with its path.
    @usableFromInline func elementError(_ error: any Error, _ number: Int, _ index: Int) -> any Error {
        guard let error = error as? ProtobufBridgeError, let fieldIndex = plan.fieldIndex(number: number) else {
            return error
        }
        return error.within(String(index)).within(fields[fieldIndex].swiftName)
    }

    /// Sets a map field of any key and value type: `entry` writes fields 1 (key) and 2 (value).
    public mutating func setMap<K, V>(
        _ number: Int, _ values: [K: V], entry: (inout ProtobufMessageWriter, K, V) throws -> Void
    ) throws {
        try elements(number, Array(values)) { message, pair in try entry(&message, pair.key, pair.value) }
        session.addMap(base, plan.fields[plan.fieldIndex(number: number)!])
    }

    private mutating func elements<T>(
        _ number: Int, _ values: [T], _ write: (inout ProtobufMessageWriter, T) throws -> Void
    ) throws {
        let field = try field(number, repeated: true)
        guard field.kind == .message, let child = field.child else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: [T].self)
        }
        let array = session.allocate(values.count * 8)
        // Index loop: `enumerated()` over a generic array instantiates iterator metadata per call.
        for i in 0..<values.count {
            let value = values[i]
            let message = session.newMessage(child)
            array.storeBytes(of: message, toByteOffset: i * 8, as: UnsafeMutableRawPointer.self)
            var writer = ProtobufMessageWriter(session: session, plan: child, base: message)
            do {
                try write(&writer, value)
                try checkRequiredFields(child, message, seen: writer.requiredSeen)
            } catch let error as ProtobufBridgeError {
                throw error.within(String(i)).within(field.swiftName)
            }
        }
        base.storeBytes(of: values.count, toByteOffset: field.quantifierOffset, as: Int.self)
        base.storeBytes(of: array, toByteOffset: field.offset, as: UnsafeMutableRawPointer.self)
    }
}

/// Writes a direct model into the message at `base` and checks its required fields.
func writeDirect<M: ProtobufDirectCodable>(
    _ value: M, session: EncodingSession, plan: MessagePlan, base: UnsafeMutableRawPointer
) throws {
    var writer = ProtobufMessageWriter(session: session, plan: plan, base: base)
    try value.write(protobuf: &writer)
    try checkRequiredFields(plan, base, seen: writer.requiredSeen)
}
