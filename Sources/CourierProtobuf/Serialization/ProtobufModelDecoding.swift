import Courier
import Foundation

/// Protobuf as a `ModelDecoding` body format: the client's or a service's default response
/// type (`.protobuf`), a candidate in content negotiation, or `.decodable(Model.self, using: .protobuf)`.
///
/// The model must be a ``ProtobufMessage`` (or an Optional of one), which names its descriptor.
/// An empty body is a valid message with every field at its default (`decodesEmptyBodies`).
public struct ProtobufModelDecoding: ModelDecoding {
    /// The decoder; it holds no state, the descriptor plans are cached globally.
    public let decoder: ProtobufDecoder
    /// The media types this decoding reads.
    public let acceptableContentTypes: [String]

    /// Protobuf bodies read by `decoder`.
    /// - Parameters:
    ///   - decoder: the decoder to use.
    ///   - acceptableContentTypes: the media types to accept; protobuf's usual four by default.
    public init(
        decoder: ProtobufDecoder = ProtobufDecoder(), acceptableContentTypes: [String] = ProtobufMediaType.acceptable
    ) {
        self.decoder = decoder
        self.acceptableContentTypes = acceptableContentTypes
    }

    /// True: an empty body is a message with every field at its default.
    public var decodesEmptyBodies: Bool { true }

    /// Decodes `type` from `body`.
    /// - Throws: `CourierError.decoding` when the bytes are not a valid message or do not fit the
    ///   model; `CourierError.configuration` when `type` is not a ``ProtobufMessage``.
    public func decode<T: Decodable>(_ type: T.Type, from body: Data, context: ResponseContext) throws -> T {
        if let message = T.self as? any ProtobufMessage.Type {
            return try decode(message, body) as! T
        }
        if let optional = T.self as? any OptionalProtobufMessage.Type {
            return try optional.decodeWrapped(body, with: decoder) as! T
        }
        throw CourierError(
            .configuration, "\(T.self) is not a ProtobufMessage, so it has no protobuf descriptor to decode with")
    }

    private func decode<M: ProtobufMessage>(_ type: M.Type, _ body: Data) throws -> M {
        try decoder.decode(M.self, from: body)
    }
}

/// `Optional<Message>` models, for calls whose response may have no body.
protocol OptionalProtobufMessage {
    static func decodeWrapped(_ body: Data, with decoder: ProtobufDecoder) throws -> Self
}

extension Optional: OptionalProtobufMessage where Wrapped: ProtobufMessage {
    static func decodeWrapped(_ body: Data, with decoder: ProtobufDecoder) throws -> Wrapped? {
        try decoder.decode(Wrapped.self, from: body)
    }
}

extension ModelDecoding where Self == ProtobufModelDecoding {
    /// Protobuf bodies (`application/x-protobuf` and friends) read through protobuf-c.
    public static var protobuf: ProtobufModelDecoding { ProtobufModelDecoding() }
}
