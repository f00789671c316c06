import Foundation
import HTTPTypes

/// The UTF-8 byte order mark: not text, and names the encoding (the JSON decoder skips it too,
/// `JSONParser`).
let utf8ByteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

/// What a response serializer sees: the request that was sent, the response head, the body.
public struct ResponseContext: Sendable {
    /// The request as it was sent.
    public var request: HTTPRequest {
        didSet { isHeadRequest = request.method == .head }
    }
    /// The response head: status and header fields.
    public var response: HTTPResponse {
        didSet { statusCode = response.status.code }
    }
    /// The body. May be a slice of a larger buffer (after preprocessing); index it from `startIndex`.
    public var body: Data
    /// `response.status.code` and `request.method == .head`, read once: each response is checked
    /// several times, and the `HTTPTypes` getters build a new value (with strings) on every read.
    private(set) var statusCode: Int
    private var isHeadRequest: Bool

    /// The context of one response.
    /// - Parameters:
    ///   - request: the request as sent.
    ///   - response: the response head.
    ///   - body: the body (pass the transport's buffer as is: it is not copied).
    public init(request: HTTPRequest, response: HTTPResponse, body: Data) {
        self.request = request
        self.response = response
        self.body = body
        statusCode = response.status.code
        isHeadRequest = request.method == .head
    }

    /// The response's `Content-Type` parsed, if it has a valid one.
    @_spi(Fuzzing) public var contentType: MediaType? {
        contentTypeField.flatMap(MediaType.init(parsing:))
    }

    /// The raw `Content-Type` value; several fields are joined with `, ` as `HTTPFields` does.
    ///
    /// Looked up without `HTTPFields`' subscript, which builds a joined string even for one field.
    var contentTypeField: String? {
        let fields = response.headerFields
        var found: String?
        for field in fields where field.name.canonicalName == "content-type" {
            if found != nil { return fields[.contentType] }
            found = field.value
        }
        return found
    }

    /// True when HTTP says this response carries no body: 204, 205, 304, or an answer to HEAD.
    public var isBodiless: Bool {
        switch statusCode {
        case 204, 205, 304: return true
        default: return isHeadRequest
        }
    }

    /// True when there is nothing to decode: a bodiless response, or an empty body.
    public var hasNoContent: Bool { isBodiless || body.isEmpty }
}

/// Turns a received response into a value.
///
/// Validation of status and content type happens before, in ``ResponsePipeline``; a serializer
/// decodes. Built-ins read as static members at the call site: `.data`, `.string`,
/// `.decodable(Model.self)`, `.json(Model.self)`, `.form(Model.self)`, `.negotiating(…)`.
/// Conform to write your own (XML, MessagePack, CSV…); Courier needs no change for it.
public protocol ResponseSerializer<Output>: Sendable {
    /// The value a response becomes.
    associatedtype Output: Sendable
    /// The media types this serializer can read, for the `Accept` header and validation.
    /// Empty means any.
    var acceptableContentTypes: [String] { get }
    /// The value for the request's `Accept` header, or nil to send none.
    ///
    /// The default joins ``acceptableContentTypes``; a negotiating serializer adds q-values.
    var acceptHeader: String? { get }
    /// Decodes the response.
    /// - Throws: `CourierError` (`.decoding`, `.emptyBody`, …).
    func serialize(_ context: ResponseContext) throws -> Output
}

extension ResponseSerializer {
    /// The acceptable content types joined with `, `; nil when any type is accepted.
    public var acceptHeader: String? {
        acceptableContentTypes.isEmpty ? nil : acceptableContentTypes.joined(separator: ", ")
    }
}

/// The bytes of the body, unchanged. Accepts any content type.
public struct DataResponseSerializer: ResponseSerializer {
    init() {}
    /// Empty: any content type.
    public var acceptableContentTypes: [String] { [] }
    /// Returns the body; empty for bodiless responses.
    public func serialize(_ context: ResponseContext) throws -> Data {
        context.isBodiless ? Data() : context.body
    }
}

extension ResponseSerializer where Self == DataResponseSerializer {
    /// The raw body bytes.
    public static var data: DataResponseSerializer { DataResponseSerializer() }
}

/// A type to decode when a call expects no body (`204 No Content`, HEAD, or a body it ignores).
public struct Empty: Codable, Sendable, Hashable {
    /// The one value.
    public init() {}
}

/// A type that has a value standing for "no body": ``Empty`` and every `Optional`.
public protocol EmptyResponseRepresentable {
    /// The value a bodiless response decodes to.
    static var emptyResponseValue: Self { get }
}

extension Empty: EmptyResponseRepresentable {
    /// `Empty()`.
    public static var emptyResponseValue: Empty { Empty() }
}

extension Optional: EmptyResponseRepresentable {
    /// `nil`.
    public static var emptyResponseValue: Wrapped? { nil }
}

extension PreparedRequest {
    /// Sets `Accept` from what `serializer` reads, unless the request already has one.
    /// - Parameter serializer: the call's response serializer.
    mutating func accept(_ serializer: some ResponseSerializer) {
        guard head.headerFields[.accept] == nil, let value = serializer.acceptHeader else { return }
        head.headerFields[.accept] = value
    }
}
