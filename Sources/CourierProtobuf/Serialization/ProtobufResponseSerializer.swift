import Courier
import Foundation

/// Decodes a protobuf response body into a ``ProtobufMessage`` model.
///
/// Accepts `application/x-protobuf`, `application/protobuf`, `application/vnd.google.protobuf`
/// and `application/octet-stream`. An empty body is a valid protobuf message (every field at
/// its default) and decodes as one.
public struct ProtobufResponseSerializer<Model: ProtobufMessage & Sendable>: ResponseSerializer {
    /// The decoder; it holds no state, the descriptor plans are cached globally.
    public let decoder: ProtobufDecoder
    /// The media types this serializer reads.
    public let acceptableContentTypes: [String]

    /// A serializer decoding `type` from protobuf bodies.
    /// - Parameters:
    ///   - type: the model type.
    ///   - decoder: the decoder to use.
    ///   - acceptableContentTypes: the media types to accept; protobuf's usual four by default.
    public init(
        _ type: Model.Type = Model.self, decoder: ProtobufDecoder = ProtobufDecoder(),
        acceptableContentTypes: [String] = ProtobufMediaType.acceptable
    ) {
        self.decoder = decoder
        self.acceptableContentTypes = acceptableContentTypes
    }

    /// Decodes the body.
    /// - Throws: `CourierError.decoding` (with the response) when the body is not a valid message
    ///   or does not fit the model.
    public func serialize(_ context: ResponseContext) throws -> Model {
        do {
            return try decoder.decode(Model.self, from: context.body)
        } catch var error as CourierError {
            error.response = context.response
            error.body = context.body
            throw error
        }
    }
}

extension ResponseSerializer {
    /// A ``ProtobufMessage`` model read from a protobuf body.
    /// - Parameter type: the model type.
    public static func protobuf<Model>(_ type: Model.Type) -> Self where Self == ProtobufResponseSerializer<Model> {
        ProtobufResponseSerializer(type)
    }
}
