import CProtobufC
import Courier
import Foundation

/// Decodes protobuf wire bytes into plain Swift models through protobuf-c.
///
/// protobuf-c parses the bytes (`protobuf_c_message_unpack`); Courier then reads the C
/// struct field by field, guided by a plan of the descriptor computed once per message type:
/// through the model's `init(from:)`, or, for ``ProtobufDirectCodable`` models, through their
/// direct accessors (several times faster).
/// protobuf-c unpacks into an arena that is freed before `decode` returns, on every path.
///
/// The bytes come from a server, so what they can make the decoder do is bounded by
/// ``Limits``: how deep messages may nest and how much memory the unpacked message may take.
/// A length prefix longer than the bytes that follow is refused before anything of that
/// length is allocated.
public struct ProtobufDecoder: Sendable {
    /// What one decode may cost at most; past either bound it throws `.decoding`.
    public struct Limits: Sendable, Hashable {
        /// The deepest message nesting accepted (the top-level message is 1), clamped to
        /// 1...200: protobuf-c and the readers recurse once per level on the caller's stack.
        public var maxDepth: Int
        /// The most bytes protobuf-c may allocate for the unpacked message (at least 4 KiB).
        public var maxAllocationBytes: Int

        /// Limits for decoding untrusted bytes.
        /// - Parameters:
        ///   - maxDepth: the deepest nesting (default 100, like Google's runtimes).
        ///   - maxAllocationBytes: the memory bound of one unpacked message (default 64 MiB).
        public init(maxDepth: Int = 100, maxAllocationBytes: Int = 64 << 20) {
            self.maxDepth = min(max(1, maxDepth), 200)
            self.maxAllocationBytes = max(4096, maxAllocationBytes)
        }

        /// Depth 100, 64 MiB.
        public static let `default` = Limits()
    }

    /// The bounds of every decode.
    public var limits: Limits

    /// Creates a decoder. It holds no other state; the per-descriptor plans are cached globally.
    /// - Parameter limits: the nesting and memory bounds (``Limits/default``).
    public init(limits: Limits = .default) { self.limits = limits }

    /// Decodes a message of `type` from `data`.
    /// - Parameters:
    ///   - type: the model type.
    ///   - data: protobuf wire bytes.
    /// - Returns: the decoded model.
    /// - Throws: `CourierError` with code `.decoding` when protobuf-c rejects the bytes (malformed,
    ///   truncated, a required field missing), a string is not valid UTF-8, an enum number is
    ///   unknown to a Swift enum without a fallback, or the model does not match the descriptor.
    public func decode<T: ProtobufMessage>(_ type: T.Type, from data: Data) throws -> T {
        try decode(type, from: data, descriptor: T.protobufDescriptor)
    }

    /// Decodes `data` as the message `descriptor` describes, into any `Decodable` model.
    /// - Parameters:
    ///   - type: the model type.
    ///   - data: protobuf wire bytes.
    ///   - descriptor: the protoc-c message descriptor (from a generated accessor function).
    /// - Returns: the decoded model.
    /// - Throws: `CourierError` with code `.decoding` (see `decode(_:from:)`).
    public func decode<T: Decodable>(
        _ type: T.Type, from data: Data, descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) throws -> T {
        if let direct = T.self as? any ProtobufDirectCodable.Type {
            return try decodeDirect(direct, from: data, descriptor: descriptor) as! T
        }
        return try withUnpacked(data, descriptor: descriptor, type: T.self) { plan, message in
            try T(from: CMessageReader(plan: plan, focus: .message(message)))
        }
    }

    /// Decodes a message of a ``ProtobufDirectCodable`` type from `data` through its direct
    /// accessors (chosen over the `Codable` overload when the type is known to conform).
    /// - Parameters:
    ///   - type: the model type.
    ///   - data: protobuf wire bytes.
    /// - Returns: the decoded model.
    /// - Throws: `CourierError` with code `.decoding` (see `decode(_:from:)`).
    public func decode<T: ProtobufMessage & ProtobufDirectCodable>(_ type: T.Type, from data: Data) throws -> T {
        try decodeDirect(type, from: data, descriptor: T.protobufDescriptor)
    }

    private func decodeDirect<T: ProtobufDirectCodable>(
        _ type: T.Type, from data: Data, descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) throws -> T {
        try withUnpacked(data, descriptor: descriptor, type: T.self) { plan, message in
            try T(protobuf: ProtobufMessageReader(plan: plan, base: message))
        }
    }

    /// Unpacks `data` with protobuf-c into an arena and runs `body` on the C message; the arena
    /// (the whole unpacked message) is freed when this returns, on every path.
    @inline(__always)
    private func withUnpacked<T>(
        _ data: Data, descriptor: UnsafePointer<ProtobufCMessageDescriptor>, type: T.Type,
        _ body: (MessagePlan, UnsafeRawPointer) throws -> T
    ) throws -> T {
        try withUnpacked(data, descriptor: descriptor, type: type, allocated: nil, body)
    }

    /// `withUnpacked`, also reporting the bytes protobuf-c allocated (for tests).
    func withUnpacked<T>(
        _ data: Data, descriptor: UnsafePointer<ProtobufCMessageDescriptor>, type: T.Type,
        allocated: UnsafeMutablePointer<Int>?, _ body: (MessagePlan, UnsafeRawPointer) throws -> T
    ) throws -> T {
        let plan: MessagePlan
        do { plan = try MessagePlan.plan(for: descriptor) } catch { throw error.courierError(.decoding) }
        if plan.schemaDepth > limits.maxDepth {
            let allowed = data.withUnsafeBytes { NestingLimit.allows($0, descriptor, limit: limits.maxDepth) }
            guard allowed else {
                throw CourierError(
                    .decoding, "\(plan.fullName) nests messages deeper than \(limits.maxDepth) levels", body: data)
            }
        }
        // protobuf-c allocates the message, its strings, arrays and sub-messages in the arena;
        // releasing the arena replaces `protobuf_c_message_free_unpacked` (its frees are no-ops).
        var arena = Arena()
        defer {
            allocated?.pointee = arena.used
            arena.release()
        }
        arena.limitAllocations(to: limits.maxAllocationBytes)
        if !plan.singularMessageTypes.isEmpty { arena.watchFreedMessages(of: plan.singularMessageTypes) }
        func unpack(_ bytes: UnsafeRawBufferPointer) -> UnsafeMutablePointer<ProtobufCMessage>? {
            withUnsafeTemporaryAllocation(byteCount: 1, alignment: 1) { empty in
                let start = bytes.baseAddress ?? UnsafeRawPointer(empty.baseAddress!)
                return protobuf_c_message_unpack(
                    descriptor, arena.allocator, bytes.count, start.assumingMemoryBound(to: UInt8.self))
            }
        }
        var message = data.withUnsafeBytes(unpack)
        if message != nil, arena.freedWatchedMessage {
            // A singular message field came twice, and protobuf-c merged it only in part: unpack
            // the bytes with the occurrences merged instead (SubmessageMerge).
            let merged: [UInt8]?
            do {
                merged = try data.withUnsafeBytes { (bytes) throws(SubmessageMerge.OverBudget) in
                    try SubmessageMerge.merged(bytes, descriptor, budget: limits.maxAllocationBytes)
                }
            } catch {
                throw CourierError(
                    .decoding,
                    "merging the repeated message fields of \(data.count) bytes as \(plan.fullName) needs more "
                        + "than the decoder's \(limits.maxAllocationBytes)-byte allocation limit",
                    body: data)
            }
            if let merged {
                arena.release()
                arena = Arena()
                arena.limitAllocations(to: limits.maxAllocationBytes)
                message = merged.withUnsafeBytes(unpack)
            }
        }
        guard let message else {
            if arena.refusedAllocation {
                throw CourierError(
                    .decoding,
                    "unpacking \(data.count) bytes as \(plan.fullName) needs more than the decoder's "
                        + "\(limits.maxAllocationBytes)-byte allocation limit",
                    body: data)
            }
            throw CourierError(
                .decoding,
                "protobuf-c could not unpack \(data.count) bytes as \(plan.fullName) "
                    + "(malformed, truncated, or a required field is missing)",
                body: data)
        }
        do {
            return try body(plan, UnsafeRawPointer(message))
        } catch {
            throw courierError(error, .decoding, T.self)
        }
    }
}
