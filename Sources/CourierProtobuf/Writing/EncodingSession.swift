import CProtobufC
import Foundation

/// The memory of one message being encoded: an ``Arena`` that owns every C struct, array and
/// string Courier builds, freed all at once. Nothing in it is ever given to
/// `protobuf_c_message_free_unpacked`.
@usableFromInline
final class EncodingSession {
    let arena = Arena()
    /// Map fields written, sorted by key before packing so that output is deterministic.
    var maps: [(base: UnsafeMutableRawPointer, field: FieldPlan)] = []

    deinit { arena.release() }

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
    @inline(__always)
    func cStringIfValid(_ string: String) -> UnsafeMutableRawPointer? {
        var string = string
        return string.withUTF8 { utf8 in
            let memory = allocate(utf8.count + 1)
            if let source = utf8.baseAddress {
                if memchr(source, 0, utf8.count) != nil { return nil }
                memory.copyMemory(from: source, byteCount: utf8.count)
            }
            memory.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
            return memory
        }
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
        var string = string
        let result: UnsafeMutableRawPointer? = string.withUTF8 { utf8 in
            let memory = allocate(utf8.count + 1)
            if let source = utf8.baseAddress {
                if memchr(source, 0, utf8.count) != nil { return nil }
                memory.copyMemory(from: source, byteCount: utf8.count)
            }
            memory.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
            return memory
        }
        guard let result else {
            throw ProtobufBridgeError(
                message:
                    "\(field.owner.fullName).\(field.protoName): protobuf-c cannot hold a string with an embedded NUL")
        }
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
        for (base, field) in maps {
            guard let entryPlan = field.child else { continue }
            let count = base.load(fromByteOffset: field.quantifierOffset, as: Int.self)
            guard count > 1, let array = base.load(fromByteOffset: field.offset, as: UnsafeMutableRawPointer?.self)
            else { continue }
            let keyField = entryPlan.fields[0]
            var entries = UnsafeMutableBufferPointer(
                start: array.assumingMemoryBound(to: UnsafeRawPointer.self), count: count)
            entries.sort { a, b in keyLess(a + keyField.offset, b + keyField.offset, keyField.kind) }
        }
    }
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
