import CProtobufC
import Courier
import Foundation

/// Decodes protobuf wire bytes into plain Swift models through protobuf-c.
///
/// protobuf-c parses the bytes (`protobuf_c_message_unpack`); Courier then reads the C
/// struct field by field, guided by a plan of the descriptor computed once per message type:
/// through the model's `init(from:)`, or, for ``ProtobufDirectCodable`` models, through their
/// direct accessors (several times faster).
/// The C message is freed before `decode` returns, on every path.
public struct ProtobufDecoder: Sendable {
    /// Creates a decoder. It holds no state; the per-descriptor plans are cached globally.
    public init() {}

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
        let plan: MessagePlan
        do { plan = try MessagePlan.plan(for: descriptor) } catch { throw error.courierError(.decoding) }
        let message: UnsafeMutablePointer<ProtobufCMessage>? = data.withUnsafeBytes { bytes in
            withUnsafeTemporaryAllocation(byteCount: 1, alignment: 1) { empty in
                let start = bytes.baseAddress ?? UnsafeRawPointer(empty.baseAddress!)
                return protobuf_c_message_unpack(
                    descriptor, nil, bytes.count, start.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard let message else {
            throw CourierError(
                .decoding,
                "protobuf-c could not unpack \(data.count) bytes as \(plan.fullName) "
                    + "(malformed, truncated, or a required field is missing)",
                body: data)
        }
        defer { protobuf_c_message_free_unpacked(message, nil) }
        do {
            if let direct = T.self as? any ProtobufDirectCodable.Type {
                return try direct.init(protobuf: ProtobufMessageReader(plan: plan, base: message)) as! T
            }
            return try T(from: CMessageReader(plan: plan, focus: .message(UnsafeRawPointer(message))))
        } catch {
            throw courierError(error, .decoding, T.self)
        }
    }
}
