import CProtobufC
import Foundation

/// The memory of one message being encoded: an ``Arena`` that owns every C struct, array and
/// string Courier builds, released all at once by ``ProtobufEncoder`` when the message is
/// packed (or on an error). Nothing in it is ever given to `protobuf_c_message_free_unpacked`.
///
/// A plain value (one pointer): writers copy it without reference counting.
@usableFromInline
struct EncodingSession {
    let arena: Arena

    init() { arena = Arena() }

    /// Frees the C message and everything it points to.
    func release() { arena.release() }

    /// Records a written map field, whose entries are sorted by key before packing so that
    /// output is deterministic.
    func addMap(_ base: UnsafeMutableRawPointer, _ field: FieldPlan) { arena.addMap(base, field) }

    /// `size` bytes aligned to 8, uninitialised.
    @inline(__always)
    func allocate(_ size: Int) -> UnsafeMutableRawPointer { arena.allocate(size) }

    /// A new C message of `plan`'s type with every field at its default.
    @inline(__always)
    func newMessage(_ plan: MessagePlan) -> UnsafeMutableRawPointer {
        let memory = allocate(plan.sizeofMessage)
        plan.descriptor.pointee.message_init(memory.assumingMemoryBound(to: ProtobufCMessage.self))
        return memory
    }

    /// A NUL-terminated copy of `string` in the arena, or nil when it contains a NUL byte.
    /// Reads the string's UTF-8 in place (no copy of the string itself, no reference counting).
    @inline(__always)
    func cStringIfValid(_ string: String) -> UnsafeMutableRawPointer? {
        if arena.smallStrings, let small = SmallString.utf8(string) {
            return SmallString.cString(small) { allocate($0) }
        }
        if let result = string.utf8.withContiguousStorageIfAvailable({ cString(copying: $0) }) { return result }
        var string = string  // Not native UTF-8 (a bridged string): make it so.
        return string.withUTF8 { cString(copying: $0) }
    }

    /// A NUL-terminated copy of `utf8` in the arena, or nil when it contains a NUL byte.
    @inline(__always)
    private func cString(copying utf8: UnsafeBufferPointer<UInt8>) -> UnsafeMutableRawPointer? {
        let count = utf8.count
        let memory = allocate(count + 1)
        if let source = utf8.baseAddress {
            if count <= 16 {
                // Short strings (most keys, names and tags): one pass, no calls.
                let target = memory.assumingMemoryBound(to: UInt8.self)
                for i in 0..<count {
                    let byte = source[i]
                    if byte == 0 { return nil }
                    target[i] = byte
                }
            } else {
                if memchr(source, 0, count) != nil { return nil }
                memory.copyMemory(from: source, byteCount: count)
            }
        }
        memory.storeBytes(of: 0, toByteOffset: count, as: UInt8.self)
        return memory
    }

    /// The error for a string with an embedded NUL in `field`.
    func embeddedNULError(_ field: FieldPlan) -> ProtobufBridgeError {
        ProtobufBridgeError(
            message: "\(field.owner.fullName).\(field.protoName): protobuf-c cannot hold a string with an embedded NUL")
    }

    /// A NUL-terminated copy of `string` in the arena.
    /// - Throws: when the string contains a NUL byte, which a C string cannot hold.
    @inline(__always)
    func cString(_ string: String, field: FieldPlan) throws(ProtobufBridgeError)
        -> UnsafeMutableRawPointer
    {
        guard let result = cStringIfValid(string) else { throw embeddedNULError(field) }
        return result
    }

    /// A copy of `bytes` in the arena, as protobuf-c's binary data.
    @inline(__always)
    func binary(_ bytes: UnsafeRawBufferPointer) -> ProtobufCBinaryData {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return ProtobufCBinaryData(len: 0, data: nil) }
        let memory = allocate(bytes.count)
        memory.copyMemory(from: source, byteCount: bytes.count)
        return ProtobufCBinaryData(len: bytes.count, data: memory.assumingMemoryBound(to: UInt8.self))
    }

    /// Sorts every written map field's entries by key (Swift dictionaries have no stable order).
    func sortMaps() {
        guard arena.hasMaps else { return }
        arena.forEachMap { base, field in
            guard let entryPlan = field.child else { return }
            let count = base.load(fromByteOffset: field.quantifierOffset, as: Int.self)
            guard count > 1, let array = base.load(fromByteOffset: field.offset, as: UnsafeMutableRawPointer?.self)
            else { return }
            let keyField = entryPlan.fields[0]
            var entries = UnsafeMutableBufferPointer(
                start: array.assumingMemoryBound(to: UnsafeRawPointer.self), count: count)
            entries.sort { a, b in keyLess(a + keyField.offset, b + keyField.offset, keyField.kind) }
        }
    }

    /// Packs the C message at `base` (built in this session) into a new `Data`.
    ///
    /// protobuf-c needs a buffer large enough before it packs. Rather than its size pass
    /// (`protobuf_c_message_get_packed_size`, a walk of the whole message), small messages are
    /// packed into arena memory of a proven upper bound and copied out: every byte protobuf-c
    /// writes comes from a C struct, array, string or bytes value Courier allocated in this
    /// arena, and no field packs to more than 15 bytes per 4 bytes of C storage (a 5-byte tag
    /// and a 10-byte varint for a negative int32 or enum; strings and bytes pack their length
    /// plus at most 15 bytes), so 4 × ``Arena/used`` + 64 bytes always suffice. Larger
    /// messages, where that bound would waste memory, are sized exactly.
    func pack(_ base: UnsafeMutableRawPointer, plan: MessagePlan) throws(ProtobufBridgeError) -> Data {
        let message = base.assumingMemoryBound(to: ProtobufCMessage.self)
        let bound = 4 * arena.used + 64
        if bound <= Self.boundedPackLimit {
            assert(protobuf_c_message_get_packed_size(message) <= bound, "packed-size bound")
            let buffer = arena.allocate(bound)
            let written = protobuf_c_message_pack(message, buffer.assumingMemoryBound(to: UInt8.self))
            return Data(bytes: buffer, count: written)
        }
        let size = protobuf_c_message_get_packed_size(message)
        var data = Data(count: size)
        let written = data.withUnsafeMutableBytes { bytes in
            size == 0 ? 0 : protobuf_c_message_pack(message, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard written == size else {
            throw ProtobufBridgeError(message: "protobuf-c packed \(written) of \(size) bytes for \(plan.fullName)")
        }
        return data
    }

    /// The largest bound packed into arena memory (larger messages are sized exactly).
    static let boundedPackLimit = 64 << 10
}

/// Orders two map keys as Google's deterministic serialization does (bytes, numbers, bools).
private func keyLess(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ kind: FieldKind) -> Bool {
    switch kind {
    case .string:
        guard let x = a.load(as: UnsafePointer<CChar>?.self) else { return b.load(as: UnsafeRawPointer?.self) != nil }
        guard let y = b.load(as: UnsafePointer<CChar>?.self) else { return false }
        return strcmp(x, y) < 0
    case .uint32, .fixed32, .uint64, .fixed64:
        return UInt64.read(kind, a)! < UInt64.read(kind, b)!
    case .bool:
        return !Bool.read(kind, a)! && Bool.read(kind, b)!
    default:
        return (Int64.read(kind, a) ?? 0) < (Int64.read(kind, b) ?? 0)
    }
}
