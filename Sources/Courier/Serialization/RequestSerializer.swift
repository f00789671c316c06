import Foundation
import HTTPTypes

/// A request on its way out: what serializers and adapters change before it is sent.
public struct PreparedRequest: Sendable {
    /// Method, URL parts and header fields.
    public var head: HTTPRequest
    /// The body, if any.
    public var body: RequestBody?

    /// A request of `head` and `body`.
    /// - Parameters:
    ///   - head: method, URL parts and header fields.
    ///   - body: the body, if any.
    public init(head: HTTPRequest, body: RequestBody? = nil) {
        self.head = head
        self.body = body
    }
}

extension PreparedRequest {
    /// Appends an already percent-encoded query (`a=1&b=2`) to the request's path.
    ///
    /// Keeps any query the path already has and adds `&` between the two.
    /// - Parameter encodedQuery: the query to add, without a leading `?`. Empty adds nothing.
    public mutating func appendQuery(_ encodedQuery: String) {
        guard !encodedQuery.isEmpty else { return }
        let path = head.path ?? "/"
        if let questionMark = path.firstIndex(of: "?") {
            let existing = path[path.index(after: questionMark)...]
            head.path = existing.isEmpty || existing.hasSuffix("&") ? path + encodedQuery : path + "&" + encodedQuery
        } else {
            head.path = path + "?" + encodedQuery
        }
    }

    /// Sets an in-memory body and its `Content-Type`, unless the caller already set a `Content-Type`.
    /// - Parameters:
    ///   - data: the body bytes.
    ///   - contentType: the media type to declare.
    public mutating func setBody(_ data: Data, contentType: String) {
        setBody(.data(data), contentType: contentType)
    }

    /// Sets a body and its `Content-Type`, unless the caller already set a `Content-Type`.
    /// - Parameters:
    ///   - body: the body, in memory or streamed from files.
    ///   - contentType: the media type to declare.
    public mutating func setBody(_ body: RequestBody, contentType: String) {
        self.body = body
        if !head.headerFields.contains(.contentType) {
            head.headerFields[.contentType] = contentType
        }
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

    /// Whether parameters go into the query string for a request with `method`.
    /// - Parameter method: the request's method.
    /// - Returns: `true` for the query string, `false` for the body.
    func usesQueryString(for method: HTTPRequest.Method) -> Bool {
        switch self {
        case .queryString: return true
        case .body: return false
        case .methodDependent: return method == .get || method == .head || method == .delete
        }
    }
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

/// Sends raw bytes as the body: `Data`, `[UInt8]` or `String` parameters, with a fixed `Content-Type`.
public struct RawBodyRequestSerializer: RequestSerializer {
    /// The `Content-Type` declared for the body.
    var contentType: String

    /// - Parameter contentType: the media type to declare.
    init(contentType: String = "application/octet-stream") { self.contentType = contentType }

    /// Puts the bytes of `parameters` into the body.
    /// - Throws: `CourierError.encoding` when `parameters` is not `Data`, `[UInt8]` or `String`.
    public func serialize<Parameters: Encodable>(_ parameters: Parameters, into request: inout PreparedRequest) throws {
        switch parameters {
        case let data as Data: request.setBody(data, contentType: contentType)
        case let bytes as [UInt8]: request.setBody(Data(bytes), contentType: contentType)
        case let string as String: request.setBody(Data(string.utf8), contentType: contentType)
        default:
            throw CourierError(
                .encoding, "a raw body needs Data, [UInt8] or String parameters, not \(Parameters.self)")
        }
    }
}

extension RequestSerializer where Self == RawBodyRequestSerializer {
    /// Raw bytes as the body with the given `Content-Type`.
    /// - Parameter contentType: the media type to declare.
    public static func raw(contentType: String = "application/octet-stream") -> RawBodyRequestSerializer {
        RawBodyRequestSerializer(contentType: contentType)
    }
}
