import CProtobufC

/// Merges the occurrences of a singular message field that a message repeats, for protobuf-c
/// to unpack again.
///
/// A singular message field sent more than once is merged (Google's runtimes do, and a sender
/// may concatenate two encodings to merge them). protobuf-c 1.4.1 merges only in part: it drops
/// the earlier occurrence's proto3 fields without presence (its merge looks for a `has_` flag they
/// do not have), and it replaces a oneof member message sent twice instead of merging it. The
/// payloads of the occurrences, concatenated, are the same merge in wire form, so bytes that
/// repeat such a field are rewritten with one occurrence holding every payload in order, at the
/// last occurrence's place, and unpacked again. Nothing is walked or copied for the others:
/// protobuf-c frees a message it has unpacked only when it replaces it, so the decode arena
/// watches its frees for messages of these types (``Arena/watchFreedMessages(of:)``).
enum SubmessageMerge {
    /// The types of the singular message fields that a message of `descriptor` can hold at any
    /// depth (the messages protobuf-c merges or replaces), as pairs of a descriptor's address and
    /// its `sizeof_message` (``Arena/watchFreedMessages(of:)``).
    static func singularMessageTypes(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> [UInt] {
        var visited: Set<UnsafeRawPointer> = []
        var types: Set<UnsafeRawPointer> = []
        collect(descriptor, &visited, &types)
        return types.sorted { UInt(bitPattern: $0) < UInt(bitPattern: $1) }.flatMap { type in
            [
                UInt(bitPattern: type),
                UInt(type.assumingMemoryBound(to: ProtobufCMessageDescriptor.self).pointee.sizeof_message),
            ]
        }
    }

    private static func collect(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, _ visited: inout Set<UnsafeRawPointer>,
        _ types: inout Set<UnsafeRawPointer>
    ) {
        guard visited.insert(UnsafeRawPointer(descriptor)).inserted else { return }
        for i in 0..<Int(descriptor.pointee.n_fields) {
            let field = descriptor.pointee.fields[i]
            guard field.type == PROTOBUF_C_TYPE_MESSAGE, let child = field.descriptor else { continue }
            if field.label != PROTOBUF_C_LABEL_REPEATED { types.insert(child) }
            collect(child.assumingMemoryBound(to: ProtobufCMessageDescriptor.self), &visited, &types)
        }
    }

    /// Past the decoder's allocation limit.
    struct OverBudget: Error {}

    /// `bytes` with each repeated singular message field merged into one occurrence, or nil when
    /// the bytes are malformed (protobuf-c refuses them next).
    /// - Throws: ``OverBudget`` when the rewrite would allocate more than `budget` bytes.
    static func merged(
        _ bytes: UnsafeRawBufferPointer, _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, budget: Int
    ) throws(OverBudget) -> [UInt8]? {
        guard let start = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return [] }
        var budget = budget
        return try rewrite(start, bytes.count, descriptor, &budget)
    }

    private enum Piece {
        case raw(Range<Int>)
        case message(number: UInt64, child: UnsafePointer<ProtobufCMessageDescriptor>, payloads: [Range<Int>])
        case dropped
    }

    private static func rewrite(
        _ bytes: UnsafePointer<UInt8>, _ count: Int, _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        _ budget: inout Int
    ) throws(OverBudget) -> [UInt8]? {
        var pieces: [Piece] = []
        var pending: [UInt64: Int] = [:]  // singular message field number → its piece
        var oneofMembers: [UInt32: UInt64] = [:]  // a oneof (its case's offset) → the member last sent
        var cursor = WireCursor(bytes: bytes, count: count)
        while let field = cursor.next() {
            let known =
                field.number > 0 && field.number <= UInt64(UInt32.max)
                ? protobuf_c_message_descriptor_get_field(descriptor, UInt32(field.number)) : nil
            if let known, known.pointee.flags & PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue != 0 {
                // Another member clears the oneof: a message member sent before it is not merged.
                let oneof = known.pointee.quantifier_offset
                if let last = oneofMembers[oneof], last != field.number, let index = pending.removeValue(forKey: last) {
                    pieces[index] = .dropped
                }
                oneofMembers[oneof] = field.number
            }
            guard field.wireType == 2, let message = descriptor.messageField(field.number) else {
                pieces.append(.raw(field.whole))
                continue
            }
            var payloads = [field.payload]
            if message.field.pointee.label != PROTOBUF_C_LABEL_REPEATED {
                if let index = pending[field.number], case .message(_, _, let earlier) = pieces[index] {
                    payloads = earlier + payloads
                    pieces[index] = .dropped
                }
                pending[field.number] = pieces.count
            }
            pieces.append(.message(number: field.number, child: message.child, payloads: payloads))
        }
        guard cursor.isAtEnd else { return nil }
        budget -= count
        guard budget >= 0 else { throw OverBudget() }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        for piece in pieces {
            switch piece {
            case .dropped: continue
            case .raw(let range):
                out.append(contentsOf: UnsafeBufferPointer(start: bytes + range.lowerBound, count: range.count))
            case .message(let number, let child, let payloads):
                let inner: [UInt8]?
                if payloads.count == 1 {
                    inner = try rewrite(bytes + payloads[0].lowerBound, payloads[0].count, child, &budget)
                } else {
                    var joined: [UInt8] = []
                    for payload in payloads {
                        joined.append(
                            contentsOf: UnsafeBufferPointer(start: bytes + payload.lowerBound, count: payload.count))
                    }
                    budget -= joined.count
                    guard budget >= 0 else { throw OverBudget() }
                    inner = try joined.withUnsafeBufferPointer { (joined) throws(OverBudget) in
                        guard let start = joined.baseAddress else { return [] }
                        return try rewrite(start, joined.count, child, &budget)
                    }
                }
                guard let inner else { return nil }
                WireCursor.appendVarint(number << 3 | 2, to: &out)
                WireCursor.appendVarint(UInt64(inner.count), to: &out)
                out.append(contentsOf: inner)
            }
        }
        return out
    }
}

/// Walks the fields of a message's wire bytes without decoding them.
struct WireCursor {
    struct Field {
        var number: UInt64
        var wireType: UInt64
        /// The tag and the value.
        var whole: Range<Int>
        /// The value; for a length-delimited field, without its length.
        var payload: Range<Int>
    }

    let bytes: UnsafePointer<UInt8>
    let count: Int
    private(set) var index = 0

    init(bytes: UnsafePointer<UInt8>, count: Int) {
        self.bytes = bytes
        self.count = count
    }

    /// Whether every byte was walked (the walk did not stop at malformed bytes).
    var isAtEnd: Bool { index == count }

    /// The next field, or nil at the end or at malformed bytes (`index` stays before them).
    mutating func next() -> Field? {
        let start = index
        guard index < count else { return nil }
        guard let key = varint() else { return fail(start) }
        let payloadStart = index
        switch key & 7 {
        case 0: guard varint() != nil else { return fail(start) }
        case 1: guard count - index >= 8 else { return fail(start) }; index += 8
        case 5: guard count - index >= 4 else { return fail(start) }; index += 4
        case 2:
            guard let length = varint(), length <= UInt64(count - index) else { return fail(start) }
            let valueStart = index
            index += Int(length)
            return Field(number: key >> 3, wireType: 2, whole: start..<index, payload: valueStart..<index)
        default: return fail(start)  // groups and invalid wire types: protobuf-c refuses them
        }
        return Field(number: key >> 3, wireType: key & 7, whole: start..<index, payload: payloadStart..<index)
    }

    private mutating func fail(_ start: Int) -> Field? {
        index = start
        return nil
    }

    private mutating func varint() -> UInt64? { Self.varint(bytes, count, &index) }

    /// The varint at `index` of the `count` bytes at `bytes` (`index` moves past it), or nil when
    /// it runs past the end or past 10 bytes.
    static func varint(_ bytes: UnsafePointer<UInt8>, _ count: Int, _ index: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < count, shift < 64 {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }

    /// Appends `value` as a varint.
    static func appendVarint(_ value: UInt64, to out: inout some RangeReplaceableCollection<UInt8>) {
        var value = value
        while value >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
    }
}

extension UnsafePointer where Pointee == ProtobufCMessageDescriptor {
    /// The field `number` when it holds messages, with their descriptor.
    func messageField(_ number: UInt64)
        -> (field: UnsafePointer<ProtobufCFieldDescriptor>, child: UnsafePointer<ProtobufCMessageDescriptor>)?
    {
        guard number > 0, number <= UInt64(UInt32.max),
            let field = protobuf_c_message_descriptor_get_field(self, UInt32(number)),
            field.pointee.type == PROTOBUF_C_TYPE_MESSAGE, let child = field.pointee.descriptor
        else { return nil }
        return (field, child.assumingMemoryBound(to: ProtobufCMessageDescriptor.self))
    }
}
