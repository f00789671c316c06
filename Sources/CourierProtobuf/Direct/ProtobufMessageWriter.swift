import CProtobufC
import Foundation

/// Writes the fields of one protobuf-c message being built, by field number, for
/// ``ProtobufDirectCodable`` models.
///
/// Setting a field marks it present (its `has_` flag, its oneof case); leave a field alone to
/// keep it absent. Setting two members of one oneof, a NUL inside a string, `-0.0` in a field
/// without presence or a number out of range throws.
public struct ProtobufMessageWriter {
    let session: EncodingSession
    // The plan's immortal buffers, held unmanaged: writing a field costs no reference counting.
    let fields: UnsafeMutableBufferPointer<FieldPlan>
    let numbers: UnsafeMutableBufferPointer<Int32>
    let planRef: Unmanaged<MessagePlan>
    let base: UnsafeMutableRawPointer
    var requiredSeen: UInt64 = 0

    init(session: EncodingSession, plan: MessagePlan, base: UnsafeMutableRawPointer) {
        self.session = session
        self.fields = plan.fields
        self.numbers = plan.indexByNumber
        self.planRef = Unmanaged.passUnretained(plan)
        self.base = base
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

    public mutating func setInt32(_ number: Int, _ value: Int32) throws { try scalar(number, value) }
    public mutating func setInt64(_ number: Int, _ value: Int64) throws { try scalar(number, value) }
    public mutating func setUInt32(_ number: Int, _ value: UInt32) throws { try scalar(number, value) }
    public mutating func setUInt64(_ number: Int, _ value: UInt64) throws { try scalar(number, value) }
    public mutating func setFloat(_ number: Int, _ value: Float) throws { try scalar(number, value) }
    public mutating func setDouble(_ number: Int, _ value: Double) throws { try scalar(number, value) }
    public mutating func setBool(_ number: Int, _ value: Bool) throws { try scalar(number, value) }

    /// Sets a string field. - Throws: for a string with an embedded NUL.
    public mutating func setString(_ number: Int, _ value: String) throws {
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
    public mutating func setEnumeration<E: ProtobufEnum>(_ number: Int, _ value: E) throws {
        try scalar(number, value.rawValue)
    }

    /// Sets a message field.
    public mutating func setMessage<M: ProtobufDirectCodable>(_ number: Int, _ value: M) throws {
        let field = try field(number)
        guard field.kind == .message, let child = field.child else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: M.self)
        }
        let message = session.newMessage(child)
        (base + field.offset).storeBytes(of: message, as: UnsafeMutableRawPointer.self)
        do {
            try writeDirect(value, session: session, plan: child, base: message)
        } catch {
            throw ProtobufBridgeError.wrapping(error, plan: plan, field: field)
        }
    }

    public mutating func setInt32s(_ number: Int, _ values: [Int32]) throws { try repeated(number, values) }
    public mutating func setInt64s(_ number: Int, _ values: [Int64]) throws { try repeated(number, values) }
    public mutating func setUInt32s(_ number: Int, _ values: [UInt32]) throws { try repeated(number, values) }
    public mutating func setUInt64s(_ number: Int, _ values: [UInt64]) throws { try repeated(number, values) }
    public mutating func setFloats(_ number: Int, _ values: [Float]) throws { try repeated(number, values) }
    public mutating func setDoubles(_ number: Int, _ values: [Double]) throws { try repeated(number, values) }
    public mutating func setBools(_ number: Int, _ values: [Bool]) throws { try repeated(number, values) }
    public mutating func setStrings(_ number: Int, _ values: [String]) throws { try repeated(number, values) }
    /// Sets a `map<string, int32>` field (entries sorted by key when packed).
    public mutating func setStringInt32Map(_ number: Int, _ values: [String: Int32]) throws {
        try repeated(number, values)
    }

    /// Sets a repeated enum field.
    public mutating func setEnumerations<E: ProtobufEnum>(_ number: Int, _ values: [E]) throws {
        try repeated(number, values.map(\.rawValue))
    }

    /// Sets a repeated message field.
    public mutating func setMessages<M: ProtobufDirectCodable>(_ number: Int, _ values: [M]) throws {
        try elements(number, values) { message, value in try value.write(protobuf: &message) }
    }

    /// Sets a map field of any key and value type: `entry` writes fields 1 (key) and 2 (value).
    public mutating func setMap<K, V>(
        _ number: Int, _ values: [K: V], entry: (inout ProtobufMessageWriter, K, V) throws -> Void
    ) throws {
        try elements(number, Array(values)) { message, pair in try entry(&message, pair.key, pair.value) }
        session.maps.append((base, plan.fields[plan.fieldIndex(number: number)!]))
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
