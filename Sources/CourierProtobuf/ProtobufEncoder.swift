import CProtobufC
import Courier
import Foundation

/// Encodes plain Swift models into protobuf wire bytes through protobuf-c.
///
/// Courier builds the C message in memory it owns (an arena released when `encode` returns),
/// walking the same per-descriptor plan the decoder uses, then calls `protobuf_c_message_pack`.
/// Fields come out in field-number order, like Google's runtimes; map entries are sorted by key
/// so the output is deterministic.
public struct ProtobufEncoder: Sendable {
    /// Creates an encoder. It holds no state; the per-descriptor plans are cached globally.
    public init() {}

    /// Encodes `value` as the message its type names.
    /// - Parameter value: the model.
    /// - Returns: protobuf wire bytes.
    /// - Throws: `CourierError` with code `.encoding` when the model does not match the descriptor,
    ///   a required field is not set, two members of a oneof are set, a number is out of range
    ///   for its field, or protobuf-c would silently change a value (a string with an embedded
    ///   NUL, `-0.0` in a field without presence).
    public func encode<T: ProtobufMessage>(_ value: T) throws -> Data {
        try encode(value, descriptor: T.protobufDescriptor)
    }

    /// Encodes any `Encodable` model as the message `descriptor` describes.
    /// - Parameters:
    ///   - value: the model.
    ///   - descriptor: the protoc-c message descriptor (from a generated accessor function).
    /// - Returns: protobuf wire bytes.
    /// - Throws: `CourierError` with code `.encoding` (see `encode(_:)`).
    public func encode<T: Encodable>(_ value: T, descriptor: UnsafePointer<ProtobufCMessageDescriptor>) throws -> Data {
        if let direct = value as? any ProtobufDirectCodable {
            return try encodeDirect(direct, descriptor: descriptor)
        }
        return try build(descriptor, type: T.self) { session, plan, base in
            let writer = CMessageWriter(session: session, plan: plan, focus: .message(base))
            try value.encode(to: writer)
            try writer.checkRequired(base)
        }
    }

    /// Encodes a ``ProtobufDirectCodable`` model through its direct accessors (chosen over the
    /// `Codable` overload when the type is known to conform).
    /// - Parameter value: the model.
    /// - Returns: protobuf wire bytes.
    /// - Throws: `CourierError` with code `.encoding` (see `encode(_:)`).
    public func encode<T: ProtobufMessage & ProtobufDirectCodable>(_ value: T) throws -> Data {
        try encodeDirect(value, descriptor: T.protobufDescriptor)
    }

    private func encodeDirect<T: ProtobufDirectCodable>(
        _ value: T, descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) throws -> Data {
        try build(descriptor, type: T.self) { session, plan, base in
            try writeDirect(value, session: session, plan: plan, base: base)
        }
    }

    /// Builds the C message with `body` in an arena, then packs it.
    @inline(__always)
    private func build<T>(
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>, type: T.Type,
        _ body: (EncodingSession, MessagePlan, UnsafeMutableRawPointer) throws -> Void
    ) throws -> Data {
        let plan: MessagePlan
        do { plan = try MessagePlan.plan(for: descriptor) } catch { throw error.courierError(.encoding) }
        let session = EncodingSession()
        defer { session.release() }
        let base = session.newMessage(plan)
        do {
            try body(session, plan, base)
            session.sortMaps()
            return try session.pack(base, plan: plan)
        } catch {
            throw courierError(error, .encoding, T.self)
        }
    }
}
