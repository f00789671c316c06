import CProtobufC
import Foundation

/// Reads the fields of one decoded protobuf-c message by field number, for
/// ``ProtobufDirectCodable`` models.
///
/// Absent fields read as their defaults (zero, empty, the proto2 default); ``has(_:)`` tells
/// presence for fields that track it. A number the message does not define, or a getter of the
/// wrong kind, throws an error naming the field.
public struct ProtobufMessageReader {
    // The plan's immortal buffers, held unmanaged: reading a field costs no reference counting.
    let fields: UnsafeMutableBufferPointer<FieldPlan>
    let numbers: UnsafeMutableBufferPointer<Int32>
    let planRef: Unmanaged<MessagePlan>
    let base: UnsafeRawPointer

    init(plan: MessagePlan, base: UnsafeRawPointer) {
        self.fields = plan.fields
        self.numbers = plan.indexByNumber
        self.planRef = Unmanaged.passUnretained(plan)
        self.base = base
    }

    @inline(__always)
    init(planRef: Unmanaged<MessagePlan>, base: UnsafeRawPointer) {
        self = planRef._withUnsafeGuaranteedRef { ProtobufMessageReader(plan: $0, base: base) }
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

    public func int32(_ number: Int) throws -> Int32 { try scalar(number, Int32.self) }
    public func int64(_ number: Int) throws -> Int64 { try scalar(number, Int64.self) }
    public func uint32(_ number: Int) throws -> UInt32 { try scalar(number, UInt32.self) }
    public func uint64(_ number: Int) throws -> UInt64 { try scalar(number, UInt64.self) }
    public func float(_ number: Int) throws -> Float { try scalar(number, Float.self) }
    public func double(_ number: Int) throws -> Double { try scalar(number, Double.self) }
    public func bool(_ number: Int) throws -> Bool { try scalar(number, Bool.self) }

    /// A string field. - Throws: when it is not valid UTF-8.
    public func string(_ number: Int) throws -> String {
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
    public func enumeration<E: ProtobufEnum>(_ number: Int, as type: E.Type = E.self) throws -> E {
        let raw = try scalar(number, Int32.self)
        guard let value = E.protobufCase(raw) else {
            throw ProtobufBridgeError(
                message: "\(plan.fullName).\(try field(number).protoName): \(raw) is not a case of \(E.self)")
        }
        return value
    }

    /// A message field, or nil when it is absent.
    public func message<M: ProtobufDirectCodable>(_ number: Int, as type: M.Type = M.self) throws -> M? {
        let field = try field(number)
        guard field.kind == .message, field.presence != .repeated, let child = field.childRef else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: M.self)
        }
        guard field.isPresent(in: base), let message = (base + field.offset).load(as: UnsafeRawPointer?.self) else {
            return nil
        }
        do {
            return try M(protobuf: ProtobufMessageReader(planRef: child, base: message))
        } catch {
            throw ProtobufBridgeError.wrapping(error, plan: plan, field: field)
        }
    }

    public func int32s(_ number: Int) throws -> [Int32] { try repeated(number, [Int32].self) }
    public func int64s(_ number: Int) throws -> [Int64] { try repeated(number, [Int64].self) }
    public func uint32s(_ number: Int) throws -> [UInt32] { try repeated(number, [UInt32].self) }
    public func uint64s(_ number: Int) throws -> [UInt64] { try repeated(number, [UInt64].self) }
    public func floats(_ number: Int) throws -> [Float] { try repeated(number, [Float].self) }
    public func doubles(_ number: Int) throws -> [Double] { try repeated(number, [Double].self) }
    public func bools(_ number: Int) throws -> [Bool] { try repeated(number, [Bool].self) }
    public func strings(_ number: Int) throws -> [String] { try repeated(number, [String].self) }
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
    public func messages<M: ProtobufDirectCodable>(_ number: Int, as type: M.Type = M.self) throws -> [M] {
        try elements(number) { try M(protobuf: $0) }
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
