import Foundation
import HTTPTypes

/// The one error type Courier throws.
///
/// A struct over an open set of codes, so new categories can be added without breaking
/// `switch` statements in apps. It keeps the underlying error, and the HTTP response and
/// body when there was one. Its description never contains credentials.
public struct CourierError: Error, Sendable, CustomStringConvertible {
    /// The category of a failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case timedOut, cannotConnect, cancelled, skipped, throttled
            case httpStatus, decoding, encoding, invalidRequest, invalidResponse
            case responseTooLarge, tls, redirect, notCached, emptyBody
            case unacceptableContentType, transport, authentication, configuration, apiError
            case noData, offline
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The connection, the transfer, or the whole request took longer than allowed.
        public static let timedOut = Code(.timedOut)
        /// No connection could be made (refused, DNS failure, unreachable).
        public static let cannotConnect = Code(.cannotConnect)
        /// The call was cancelled by the caller.
        public static let cancelled = Code(.cancelled)
        /// A skip condition (veto hook, in-flight guard) dropped the call before sending.
        public static let skipped = Code(.skipped)
        /// A per-endpoint request interval refused the call.
        public static let throttled = Code(.throttled)
        /// The server answered with a status code the call does not accept.
        public static let httpStatus = Code(.httpStatus)
        /// The body could not be decoded into the requested type.
        public static let decoding = Code(.decoding)
        /// The parameters or body could not be encoded.
        public static let encoding = Code(.encoding)
        /// The request is malformed (bad URL, forbidden header bytes, unsafe path).
        public static let invalidRequest = Code(.invalidRequest)
        /// The server's response violates HTTP (bad status line, truncated body, …).
        public static let invalidResponse = Code(.invalidResponse)
        /// The response body passed the configured maximum size.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// TLS failed: certificate not trusted, handshake error.
        public static let tls = Code(.tls)
        /// A redirect was refused (too many, downgrade, bad location).
        public static let redirect = Code(.redirect)
        /// The cache policy asked for cached data only and there was none.
        public static let notCached = Code(.notCached)
        /// The call expected a body and the response had none.
        public static let emptyBody = Code(.emptyBody)
        /// The response's Content-Type is not one the call accepts.
        public static let unacceptableContentType = Code(.unacceptableContentType)
        /// Any other transport failure (connection reset or closed before an answer, protocol error).
        public static let transport = Code(.transport)
        /// The credential could not be refreshed, or refreshing was refused.
        public static let authentication = Code(.authentication)
        /// The client or a call is configured in a way that cannot work.
        public static let configuration = Code(.configuration)
        /// The server answered with success at the HTTP level but reported a failure in the
        /// body (an envelope such as `{"code": 4012, "msg": "…"}` whose code is not success).
        public static let apiError = Code(.apiError)
        /// The call succeeded but its payload is "no usable data" by the call's
        /// `CallOptions.noData` (empty, `null`, an empty list): show the empty state. A call
        /// whose model is optional gets `nil` instead.
        public static let noData = Code(.noData)
        /// The network status source reported no usable network: the call was not sent.
        public static let offline = Code(.offline)

        public var description: String { base.rawValue }
    }

    /// The category.
    public let code: Code
    /// A readable explanation, free of secrets.
    public var message: String
    /// The error that caused this one, if any (a `DecodingError`, a curl failure, …).
    public var underlying: (any Error & Sendable)?
    /// The response head, when the server answered.
    public var response: HTTPResponse?
    /// The response body, when the server answered with one.
    public var body: Data?
    /// The server's error body decoded into the call's error model type, if it named one.
    public var errorModel: (any Sendable)?
    /// For `.decoding`: the coding path, as dotted keys (`items.3.price`); a dictionary's keys
    /// as the server sent them (`description` quotes them).
    public var codingPath: String?
    /// The app's own error for this failure (see `Service/ErrorMapping.swift`), read typed with
    /// ``domain(as:)``.
    var domainError: (any Error & Sendable)?
    /// For a response check's refusal: whether it may be retried (nil for any other failure).
    var refusalIsRetryable: Bool?
    /// For `.timedOut`: the transfer timed out before any connection was made (connecting).
    var timedOutConnecting = false

    /// An error of your own making, e.g. in a validator, an adapter or a serializer.
    /// - Parameters:
    ///   - code: what went wrong.
    ///   - message: a readable explanation, without secrets.
    ///   - underlying: the error that caused it, if any.
    ///   - response: the HTTP response, when there was one.
    ///   - body: the response body, when there was one.
    public init(
        _ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil,
        response: HTTPResponse? = nil, body: Data? = nil
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.response = response
        self.body = body
    }

    /// The HTTP status of the response, if there was one.
    public var status: HTTPResponse.Status? { response?.status }

    /// The server's error model, cast to the type the call named.
    public func errorModel<T>(as type: T.Type) -> T? { errorModel as? T }

    public var description: String {
        var text = "CourierError.\(code): \(message)"
        if let status = response?.status { text += " (HTTP \(status.code))" }
        // Quoted: a dictionary's keys in it are the server's text.
        if let codingPath, !codingPath.isEmpty { text += " at \(Redaction.quoted(codingPath, limit: 1_024))" }
        // Quoted: it may hold what a server sent (a decoder quotes a value it refused).
        if let underlying { text += " — underlying: \(Redaction.quoted(String(describing: underlying), limit: 1_024))" }
        if let domainError { text += " — domain: \(String(describing: domainError))" }
        return text
    }
}

extension CourierError {
    /// True for the failures a retry may cure: timeouts, refused or reset connections, and
    /// connections closed before any answer.
    public var isTransient: Bool {
        code == .timedOut || code == .cannotConnect || code == .transport
    }

    /// Whether no connection could be made at all: refused, unreachable, or timed out connecting
    /// (`ServerOutcome.connectionFailure` for a server pool).
    var isConnectionFailure: Bool { code == .cannotConnect || timedOutConnecting }
}
