import Foundation
import HTTPTypes

/// A request on its way out: what serializers and adapters change before it is sent.
public struct PreparedRequest: Sendable {
    /// Method, URL parts and header fields.
    public var head: HTTPRequest
    /// The body, if any.
    public var body: RequestBody?

    public init(head: HTTPRequest, body: RequestBody? = nil) {
        self.head = head
        self.body = body
    }
}

/// Where a request serializer puts parameters.
public enum ParameterDestination: Sendable, Hashable {
    /// Query string for GET, HEAD and DELETE; body for the others (as AFNetworking did).
    case methodDependent
    /// Always the query string.
    case queryString
    /// Always the body.
    case body
}

/// Turns parameters into the outgoing request: query items and/or a body and its `Content-Type`.
///
/// Conform to write a serializer of your own (MessagePack, XML, …) and pass it per call
/// or as a client default; Courier needs no change for it.
public protocol RequestSerializer: Sendable {
    /// Encodes `parameters` into `request`.
    /// - Throws: `CourierError` with code `.encoding` when the value cannot be encoded.
    func serialize<Parameters: Encodable>(_ parameters: Parameters, into request: inout PreparedRequest) throws
}
