import Foundation

/// Where a call's value goes, by the label it was passed with: `parameters:` is the query
/// string, `body:` the body — whatever the method and the serializer's `destination` (which
/// applies only where a serializer is called directly).
enum ParameterPlacement {
    case query
    case body
}

/// A serializer that writes query strings as well as bodies (JSON, form): a service call
/// tells it where the value goes by setting its destination for the call.
protocol PlacingRequestSerializer: RequestSerializer {
    var destination: ParameterDestination { get set }
}

extension PlacingRequestSerializer {
    /// Encodes `value` into the query string or the body of `request`.
    func serialize<Value: Encodable>(
        _ value: Value, at placement: ParameterPlacement, into request: inout PreparedRequest
    )
        throws
    {
        guard destination.usesQueryString(for: request.head.method) != (placement == .query) else {
            return try serialize(value, into: &request)
        }
        var placed = self
        placed.destination = placement == .query ? .queryString : .body
        try placed.serialize(value, into: &request)
    }
}

extension JSONRequestSerializer: PlacingRequestSerializer {}
extension FormRequestSerializer: PlacingRequestSerializer {}

extension ServiceCore {
    /// The query encoder for serializers that only write bodies (multipart, protobuf, raw, yours).
    private static let queryEncoder = URLEncodedFormEncoder()

    /// Encodes a call's value where its label says: query parameters through the serializer's
    /// query encoder (a URL-encoded form for serializers that only write bodies), a body
    /// through the serializer.
    static func encode(
        _ value: any Encodable & Sendable, at placement: ParameterPlacement, with serializer: any RequestSerializer,
        into request: inout PreparedRequest
    ) throws {
        if let placing = serializer as? any PlacingRequestSerializer {
            try placing.serialize(value, at: placement, into: &request)
        } else if placement == .query {
            request.appendQuery(try queryEncoder.encodeQuery(value))
        } else {
            try serializer.serialize(value, into: &request)
        }
    }
}
