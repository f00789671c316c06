import Courier
import Foundation

/// Media types for protobuf bodies.
public enum ProtobufMediaType {
    /// What Courier declares on the bodies it sends.
    public static let request = "application/x-protobuf"
    /// What a protobuf response may be labelled with.
    public static let acceptable = [
        "application/x-protobuf", "application/protobuf", "application/vnd.google.protobuf",
        "application/octet-stream",
    ]
}

/// Sends parameters as a protobuf body (`Content-Type: application/x-protobuf`).
///
/// The parameters must be a ``ProtobufMessage`` (their type names the descriptor); anything else
/// is an encoding error. A `Content-Type` the caller already set is kept.
public struct ProtobufRequestSerializer: RequestSerializer {
    /// The encoder; it holds no state, the descriptor plans are cached globally.
    public let encoder: ProtobufEncoder
    /// The media type declared on the body.
    public let contentType: String

    /// A protobuf body serializer.
    /// - Parameters:
    ///   - encoder: the encoder to use.
    ///   - contentType: the media type to declare, `application/x-protobuf` by default.
    public init(encoder: ProtobufEncoder = ProtobufEncoder(), contentType: String = ProtobufMediaType.request) {
        self.encoder = encoder
        self.contentType = contentType
    }

    /// Encodes `parameters` into the request body.
    /// - Throws: `CourierError.encoding` when the parameters are not a ``ProtobufMessage`` or do not encode.
    public func serialize<Parameters: Encodable>(_ parameters: Parameters, into request: inout PreparedRequest)
        throws
    {
        guard let message = parameters as? any ProtobufMessage else {
            throw CourierError(
                .encoding,
                "\(Parameters.self) is not a ProtobufMessage, so it has no protobuf descriptor to encode with")
        }
        let data = try encoder.encode(message)
        request.body = .data(data)
        if request.head.headerFields[.contentType] == nil {
            request.head.headerFields[.contentType] = contentType
        }
    }
}

extension RequestSerializer where Self == ProtobufRequestSerializer {
    /// Parameters sent as a protobuf body (`application/x-protobuf`).
    public static var protobuf: ProtobufRequestSerializer { ProtobufRequestSerializer() }
}
