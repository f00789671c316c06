import CProtobufC
import Foundation

/// Writes a Swift collection into a repeated field (or map): one arena copy for arrays of
/// scalars and strings and for `[String: Int32]`; the collection's own `encode(to:)` otherwise.
@inline(__always)
func writeRepeated<T: Encodable>(
    _ value: T, session: EncodingSession, field: FieldPlan, base: UnsafeMutableRawPointer
) throws {
    switch field.kind {
    case .int32, .sint32, .sfixed32, .enumeration:
        if T.self == [Int32].self { return store(unsafeBitCast(value, to: [Int32].self), session, field, base) }
    case .int64, .sint64, .sfixed64:
        if T.self == [Int64].self { return store(unsafeBitCast(value, to: [Int64].self), session, field, base) }
    case .uint32, .fixed32:
        if T.self == [UInt32].self { return store(unsafeBitCast(value, to: [UInt32].self), session, field, base) }
    case .uint64, .fixed64:
        if T.self == [UInt64].self { return store(unsafeBitCast(value, to: [UInt64].self), session, field, base) }
    case .float:
        if T.self == [Float].self { return store(unsafeBitCast(value, to: [Float].self), session, field, base) }
    case .double:
        if T.self == [Double].self { return store(unsafeBitCast(value, to: [Double].self), session, field, base) }
    case .bool:
        if T.self == [Bool].self {
            return store(
                unsafeBitCast(value, to: [Bool].self).map { protobuf_c_boolean($0 ? 1 : 0) }, session, field, base)
        }
    case .string:
        if T.self == [String].self {
            let strings = unsafeBitCast(value, to: [String].self)
            let array = session.allocate(strings.count * 8)
            for (i, string) in strings.enumerated() {
                array.storeBytes(
                    of: try session.cString(string, field: field), toByteOffset: i * 8,
                    as: UnsafeMutableRawPointer.self)
            }
            base.storeBytes(of: strings.count, toByteOffset: field.quantifierOffset, as: Int.self)
            base.storeBytes(of: array, toByteOffset: field.offset, as: UnsafeMutableRawPointer.self)
            return
        }
    case .message where field.isMap:
        if let entryPlan = field.child, T.self == [String: Int32].self,
            entryPlan.fields[0].kind == .string, entryPlan.fields[1].kind == .int32
        {
            let map = unsafeBitCast(value, to: [String: Int32].self)
            let keyField = entryPlan.fields[0]
            let valueField = entryPlan.fields[1]
            let array = session.allocate(map.count * 8)
            var i = 0
            for (key, number) in map {
                let entry = session.newMessage(entryPlan)
                entry.storeBytes(
                    of: try session.cString(key, field: keyField), toByteOffset: keyField.offset,
                    as: UnsafeMutableRawPointer.self)
                entry.storeBytes(of: number, toByteOffset: valueField.offset, as: Int32.self)
                array.storeBytes(of: entry, toByteOffset: i * 8, as: UnsafeMutableRawPointer.self)
                i += 1
            }
            base.storeBytes(of: map.count, toByteOffset: field.quantifierOffset, as: Int.self)
            base.storeBytes(of: array, toByteOffset: field.offset, as: UnsafeMutableRawPointer.self)
            session.addMap(base, field)
            return
        }
    case .message:
        // [Message]: encode the elements directly, without an unkeyed container.
        if let child = field.child, let messages = value as? any ProtobufRepeatedMessagesWriting {
            return try messages.writeMessages(session: session, child: child, field: field, base: base)
        }
    default:
        break
    }
    try value.encode(to: CMessageWriter(session: session, plan: field.owner, focus: .repeated(field, base: base)))
}

/// Arrays of messages written without the unkeyed-container machinery.
protocol ProtobufRepeatedMessagesWriting {
    func writeMessages(session: EncodingSession, child: MessagePlan, field: FieldPlan, base: UnsafeMutableRawPointer)
        throws
}

extension Array: ProtobufRepeatedMessagesWriting where Element: Encodable {
    func writeMessages(session: EncodingSession, child: MessagePlan, field: FieldPlan, base: UnsafeMutableRawPointer)
        throws
    {
        let array = session.allocate(count * 8)
        for i in 0..<count {  // Not `enumerated()`: its iterator metadata is instantiated per call.
            let element = self[i]
            let message = session.newMessage(child)
            array.storeBytes(of: message, toByteOffset: i * 8, as: UnsafeMutableRawPointer.self)
            let writer = CMessageWriter(session: session, plan: child, focus: .message(message))
            do {
                try element.encode(to: writer)
                try writer.checkRequired(message)
            } catch let error as ProtobufBridgeError {
                throw error.within(String(i))
            }
        }
        base.storeBytes(of: count, toByteOffset: field.quantifierOffset, as: Int.self)
        base.storeBytes(of: array, toByteOffset: field.offset, as: UnsafeMutableRawPointer.self)
    }
}

@inline(__always)
private func store<E>(_ values: [E], _ session: EncodingSession, _ field: FieldPlan, _ base: UnsafeMutableRawPointer) {
    let size = values.count * MemoryLayout<E>.stride
    let array = session.allocate(size)
    values.withUnsafeBytes { array.copyMemory(from: $0.baseAddress!, byteCount: size) }
    base.storeBytes(of: values.count, toByteOffset: field.quantifierOffset, as: Int.self)
    base.storeBytes(of: array, toByteOffset: field.offset, as: UnsafeMutableRawPointer.self)
}

/// A C array that grows in the arena, its count and pointer kept current in the message.
struct CArrayBuilder {
    let field: FieldPlan
    let base: UnsafeMutableRawPointer
    private(set) var count = 0
    private var capacity = 0
    private var array: UnsafeMutableRawPointer?

    init(field: FieldPlan, base: UnsafeMutableRawPointer) {
        self.field = field
        self.base = base
    }

    /// The address of a new last element.
    mutating func append(_ session: EncodingSession) -> UnsafeMutableRawPointer {
        let stride = field.kind.cSize
        if count == capacity {
            let grown = session.allocate(max(4, capacity * 2) * stride)
            if let array { grown.copyMemory(from: array, byteCount: count * stride) }
            array = grown
            capacity = max(4, capacity * 2)
            base.storeBytes(of: grown, toByteOffset: field.offset, as: UnsafeMutableRawPointer.self)
        }
        count += 1
        base.storeBytes(of: count, toByteOffset: field.quantifierOffset, as: Int.self)
        return array! + (count - 1) * stride
    }
}

/// Elements of a repeated field in order; for a map, alternating keys and values (how
/// `Dictionary` encodes keys that are neither `String` nor `Int`).
struct RepeatedWriteContainer: UnkeyedEncodingContainer {
    let session: EncodingSession
    let plan: MessagePlan
    let field: FieldPlan
    private var builder: CArrayBuilder
    private var entry: UnsafeMutableRawPointer?
    private(set) var count = 0

    init(session: EncodingSession, plan: MessagePlan, field: FieldPlan, base: UnsafeMutableRawPointer) {
        self.session = session
        self.plan = plan
        self.field = field
        self.builder = CArrayBuilder(field: field, base: base)
    }

    var codingPath: [any CodingKey] { [] }

    /// The plan, field and address the next value goes to.
    private mutating func next() -> (MessagePlan, FieldPlan, UnsafeMutableRawPointer) {
        defer { count += 1 }
        guard field.isMap, let entryPlan = field.child else { return (plan, field, builder.append(session)) }
        if count % 2 == 0 {
            let entry = session.newMessage(entryPlan)
            builder.append(session).storeBytes(of: entry, as: UnsafeMutableRawPointer.self)
            self.entry = entry
        }
        let part = entryPlan.fields[count % 2]
        return (entryPlan, part, entry! + part.offset)
    }

    private mutating func scalar<S: CScalar>(_ value: S) throws {
        let (_, field, address) = next()
        try writeScalar(value, field: field, address: address)
    }
    private mutating func unsupported<T>(_ type: T.Type) throws {
        throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: [T].self)
    }

    mutating func encodeNil() throws {
        throw ProtobufBridgeError(message: "\(plan.fullName).\(field.protoName): protobuf lists cannot hold null")
    }
    mutating func encode(_ value: Bool) throws { try scalar(value) }
    mutating func encode(_ value: String) throws {
        let (plan, field, address) = next()
        guard field.kind == .string else {
            throw ProtobufBridgeError.typeMismatch(field, in: plan, swiftType: [String].self)
        }
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
        let index = count
        let (plan, field, address) = next()
        do {
            try writeValue(value, session: session, plan: plan, field: field, address: address)
        } catch let error as ProtobufBridgeError {
            throw error.within(String(index))
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let (plan, field, address) = next()
        return CMessageWriter(session: session, plan: plan, focus: .value(field, address: address))
            .container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        FailingWriteContainer<EmptyKey>(
            error: ProtobufBridgeError(message: "\(plan.fullName).\(field.protoName): protobuf has no nested lists"))
    }

    mutating func superEncoder() -> any Encoder {
        let (plan, field, address) = next()
        return CMessageWriter(session: session, plan: plan, focus: .value(field, address: address))
    }
}
