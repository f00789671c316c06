import Foundation
import HTTPTypes

/// Per-request overrides of the client's configuration, and callbacks for one request.
public struct RequestOptions: Sendable {
    /// Replaces the client's total timeout (redirects included).
    public var timeout: Duration?
    /// Replaces the client's connect timeout.
    public var connectTimeout: Duration?
    /// Replaces the client's stall timeout.
    public var stallTimeout: Duration?
    /// Replaces the client's maximum response size.
    public var maxResponseSize: Int64?
    /// Replaces the client's redirect configuration.
    public var redirects: HTTPClient.RedirectConfiguration?
    /// More header names to redact in logs and drop on cross-origin redirects.
    public var sensitiveHeaderNames: Set<HTTPField.Name>
    /// Called on the transport's thread as the body goes out; keep it cheap.
    public var uploadProgress: (@Sendable (TransferProgress) -> Void)?
    /// Called on the transport's thread as the body comes in; keep it cheap.
    public var downloadProgress: (@Sendable (TransferProgress) -> Void)?
    /// How this call uses the client's cache.
    public var cachePolicy: CachePolicy
    /// Cache this call's response for this long, whatever its caching headers say.
    public var cacheLifetime: Duration?
    /// Serve a stale cached response when the network fails or answers 5xx (nil: the cache's setting).
    public var staleIfError: Bool?
    /// Cookies for this call: the jar's cookies are sent on every hop (recomputed for each
    /// redirect target, unless the request already carries a `Cookie` header on its first hop),
    /// and every hop's `Set-Cookie` is stored, a redirect's included.
    public var cookieJar: CookieJar?
    /// Whether the client adds its credential: a service decides for its calls (its servers
    /// are the API's); `nil` lets the client decide by its own origins.
    var sendsCredential: Bool?

    public init(
        timeout: Duration? = nil, connectTimeout: Duration? = nil, stallTimeout: Duration? = nil,
        maxResponseSize: Int64? = nil, redirects: HTTPClient.RedirectConfiguration? = nil,
        sensitiveHeaderNames: Set<HTTPField.Name> = [],
        uploadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        downloadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        cachePolicy: CachePolicy = .useProtocolCachePolicy, cacheLifetime: Duration? = nil, staleIfError: Bool? = nil,
        cookieJar: CookieJar? = nil
    ) {
        self.timeout = timeout
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
        self.maxResponseSize = maxResponseSize
        self.redirects = redirects
        self.sensitiveHeaderNames = sensitiveHeaderNames
        self.uploadProgress = uploadProgress
        self.downloadProgress = downloadProgress
        self.cachePolicy = cachePolicy
        self.cacheLifetime = cacheLifetime
        self.staleIfError = staleIfError
        self.cookieJar = cookieJar
    }
}

extension RequestOptions {
    /// The options with every value checked as the client's are (see `ConfigurationBounds`).
    /// - Throws: `CourierError.configuration` for a timeout of zero or less, or a maximum
    ///   response size below 1.
    func validated() throws(CourierError) -> RequestOptions {
        var checked = self
        checked.timeout = try ConfigurationBounds.timeout(timeout, "request timeout")
        checked.connectTimeout = try ConfigurationBounds.timeout(connectTimeout, "request connect timeout")
        checked.stallTimeout = try ConfigurationBounds.timeout(stallTimeout, "request stall timeout")
        if let maxResponseSize {
            checked.maxResponseSize = try ConfigurationBounds.size(maxResponseSize, "request maximum response size")
        }
        if let redirects { checked.redirects?.maxRedirects = max(0, redirects.maxRedirects) }
        return checked
    }
}

extension HTTPClient {
    /// A response with its whole body.
    public struct Response: Sendable {
        /// Status and header fields of the final response.
        public var head: HTTPResponse
        /// The body, content-decoded.
        public var body: Data
        /// Timings and sizes of the final hop.
        public var metrics: TransferMetrics
        /// The request that produced this response (after redirects).
        public var request: HTTPRequest
        /// The URL that answered, after redirects.
        public var url: URL
        /// How many redirects were followed.
        public var redirectCount: Int
        /// Timings and sizes of each redirect hop before the final one, in order (empty
        /// without redirects); with ``metrics``, the whole call.
        public var redirectMetrics: [TransferMetrics] = []
        /// True when the body came from the cache (a hit, a 304 revalidation, or stale-if-error).
        public var isFromCache = false
        /// True when a cached response was served past its freshness.
        public var isStale = false

        init(
            head: HTTPResponse, body: Data, metrics: TransferMetrics, request: HTTPRequest, url: URL,
            redirectCount: Int
        ) {
            self.head = head
            self.body = body
            self.metrics = metrics
            self.request = request
            self.url = url
            self.redirectCount = redirectCount
        }

        /// The status code of the final response.
        public var status: HTTPResponse.Status { head.status }
    }

    /// A response whose body is still arriving.
    public struct StreamedResponse: Sendable {
        /// Status and header fields of the final response.
        public var head: HTTPResponse
        /// The body in chunks; read it once.
        public var body: ResponseBodyStream
        /// The request that produced this response (after redirects).
        public var request: HTTPRequest
        /// The URL that answered, after redirects.
        public var url: URL
        /// How many redirects were followed.
        public var redirectCount: Int
    }
}
