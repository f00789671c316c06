import Foundation
import HTTPTypes

/// A response the test server sends: status, headers and body, optionally delayed, streamed,
/// or broken on purpose with a ``Fault``.
///
/// `Content-Length` (or `Transfer-Encoding: chunked` when ``chunks`` is set) and `Connection`
/// are added by the server; do not set them yourself unless a test needs a wrong value.
public struct ScriptedResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The reason phrase; a standard one when `nil`.
    public var reason: String?
    /// The header fields to send.
    public var headers: HTTPFields
    /// The body, sent with `Content-Length` (ignored when ``chunks`` is set).
    public var body: Data
    /// When set, the body is sent with chunked transfer encoding, one chunk per element, each
    /// written separately.
    public var chunks: [Data]?
    /// The pause between chunks (or trickled pieces).
    public var chunkInterval: Duration
    /// How long the server waits before it sends anything.
    public var delay: Duration
    /// A way to break the response on purpose.
    public var fault: Fault?
    /// Whether the server closes the connection after this response.
    public var closesConnection: Bool

    /// A body generated on the fly instead of held in memory (used by `/bytes/{n}`).
    var patternLength: Int?

    /// Creates a response.
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: The header fields.
    ///   - body: The body.
    ///   - delay: A wait before anything is sent.
    ///   - fault: A way to break the response.
    public init(
        status: Int = 200, headers: HTTPFields = [:], body: Data = Data(), delay: Duration = .zero,
        fault: Fault? = nil
    ) {
        self.status = status
        self.reason = nil
        self.headers = headers
        self.body = body
        self.chunks = nil
        self.chunkInterval = .zero
        self.delay = delay
        self.fault = fault
        self.closesConnection = false
        self.patternLength = nil
    }

    /// A response with a UTF-8 text body.
    /// - Parameters:
    ///   - status: The status code.
    ///   - text: The body.
    ///   - contentType: The `Content-Type` value.
    public static func text(_ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8")
        -> ScriptedResponse
    {
        ScriptedResponse(status: status, headers: [.contentType: contentType], body: Data(text.utf8))
    }

    /// A response with a JSON body made from a JSON-compatible value (dictionaries, arrays,
    /// strings, numbers, booleans, `NSNull`), keys sorted.
    /// - Parameters:
    ///   - object: The value to serialize.
    ///   - status: The status code.
    public static func json(_ object: Any, status: Int = 200) -> ScriptedResponse {
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("null".utf8)
        return ScriptedResponse(status: status, headers: [.contentType: "application/json"], body: data)
    }

    /// A response whose body is a JSON document given as text.
    /// - Parameters:
    ///   - json: The JSON text.
    ///   - status: The status code.
    public static func json(text json: String, status: Int = 200) -> ScriptedResponse {
        ScriptedResponse(status: status, headers: [.contentType: "application/json"], body: Data(json.utf8))
    }

    /// A response with only a status line and the given headers.
    public static func status(_ status: Int, headers: HTTPFields = [:]) -> ScriptedResponse {
        ScriptedResponse(status: status, headers: headers)
    }

    /// A chunked response, one chunk per element, written separately with `interval` between them.
    public static func chunked(
        _ chunks: [Data], status: Int = 200, headers: HTTPFields = [:], interval: Duration = .zero
    )
        -> ScriptedResponse
    {
        var response = ScriptedResponse(status: status, headers: headers)
        response.chunks = chunks
        response.chunkInterval = interval
        return response
    }

    /// A redirect to `location`.
    public static func redirect(to location: String, status: Int = 302) -> ScriptedResponse {
        var response = ScriptedResponse.json(["redirect": location], status: status)
        response.headers[.location] = location
        return response
    }

    /// Returns a copy with a header field added.
    public func with(_ name: HTTPField.Name, _ value: String) -> ScriptedResponse {
        var copy = self
        copy.headers.append(HTTPField(name: name, value: value))
        return copy
    }

    /// Returns a copy with a header field added; an invalid field name is ignored.
    public func with(_ name: String, _ value: String) -> ScriptedResponse {
        guard let fieldName = HTTPField.Name(name) else { return self }
        return with(fieldName, value)
    }
}

/// A way the server breaks a response on purpose (see issue 8's fault-injecting server).
public enum Fault: Sendable, Equatable {
    /// Sends part of the header block, then resets the connection (RST).
    case resetDuringHeaders
    /// Sends the headers and half the body, then resets the connection (RST).
    case resetDuringBody
    /// Sends the headers and half the body, then closes the connection normally (FIN).
    case closeDuringBody
    /// Reads the request and closes the connection without answering.
    case closeWithoutResponse
    /// Sends the headers, then nothing until the client closes or the server stops.
    case stallAfterHeaders
    /// Sends the body `bytes` at a time with `interval` between pieces.
    case trickle(bytes: Int, interval: Duration)
    /// Sends a chunked body that ends in the middle of a chunk, then closes.
    case truncatedChunked
    /// Sends a status line that is not HTTP, then closes.
    case badStatusLine
    /// Sends a header block with a NUL byte and a malformed field line, then closes.
    case badHeaderBytes
    /// Declares a `Content-Length` `extra` bytes larger than the body, sends the body, then closes.
    case contentLengthLarger(extra: Int)
    /// Declares a `Content-Length` smaller than the body and sends the whole body, then closes.
    case contentLengthSmaller
    /// Pads the header block with filler fields to about `size` bytes; the response is otherwise valid.
    case hugeHeaders(size: Int)
    /// Sends a chunked body that never ends, until the client closes or the server stops.
    case endless
    /// Sends exactly these bytes as the whole response (head and body), then closes: for heads
    /// and framings no well-behaved server writes (see `/fault/...` in `BuiltInRoutes+Hostile`).
    case raw(Data)
    /// Sends these bytes `bytes` at a time with `interval` between pieces, then closes: a
    /// response (head included) that drips in.
    case drip(Data, bytes: Int, interval: Duration)
}
