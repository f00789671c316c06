import Foundation
import HTTPTypes
import Logging

/// Per-call settings: the one per-call options type, for `APIService` calls and for
/// `HTTPClient.send`/`stream` alike.
///
/// Precedence: a setting made here wins over the service's (`ServiceConfiguration`), which
/// wins over the client's (`HTTPClient.Configuration`); a setting left `nil` (or empty) here
/// falls back. No setting exists twice in one layer.
///
/// Only what varies from call to call lives here. Settings of the connection or of the whole
/// client (connect and stall timeouts, the redaction list, the cookie jar, proxy, TLS) are
/// `HTTPClient.Configuration`'s; settings of a whole domain (envelope, signing, authentication,
/// monitors) are `ServiceConfiguration`'s.
///
/// Settings that apply to every request, `HTTPClient.send` and `stream` included: `timeout`,
/// `maxResponseSize`, `maxRedirects`, the progress callbacks and the cache settings (`send`
/// only: `stream` bypasses the cache). The others (serializer, headers, retry, interval,
/// server, validation, adapters, de-duplication, parameters, vetoes, `userInfo`) are steps of a
/// service call and are ignored by `HTTPClient.send`, which sends the request it is given once.
public struct CallOptions: Sendable {
    /// How parameters are encoded (`.json`, `.form`, `.multipart`, …). Service calls only.
    public var requestSerializer: (any RequestSerializer)?
    /// Header fields for this call, on top of the service's defaults. Service calls only.
    public var headers: HTTPFields
    /// The total timeout of one attempt (redirects included); replaces the client's.
    public var timeout: Duration?
    /// Replaces the client's maximum response size.
    public var maxResponseSize: Int64?
    /// Replaces the client's `maxRedirects` (0: redirects are not followed).
    public var maxRedirects: Int?
    /// Called on the transport's thread as the body goes out; keep it cheap.
    public var uploadProgress: (@Sendable (TransferProgress) -> Void)?
    /// Called on the transport's thread as the body comes in; keep it cheap.
    public var downloadProgress: (@Sendable (TransferProgress) -> Void)?
    /// How this call uses the client's cache: `.returnCacheDataElseLoad`, …
    public var cachePolicy: CachePolicy
    /// Cache this call's response for this long, whatever its caching headers say.
    public var cacheLifetime: Duration?
    /// Serve a stale cached response when the network fails or answers 5xx (nil: the cache's setting).
    public var staleIfError: Bool?
    /// When and how failed attempts are retried. Service calls only.
    public var retryPolicy: RetryPolicy?
    /// The shortest time between two calls to this endpoint; off by default. Service calls only.
    public var interval: RequestInterval?
    /// Send this call to another server than the service's (no failover for it). Unless it is
    /// one of the API's own origins (the client's base URL or `credentialOrigins`, the
    /// service's servers), it gets no credential, unless `sendsCredentialToServer` is set.
    /// Service calls only (`send` takes the URL in its request). A URL that is not a usable base
    /// URL (`http` or `https`, a host, an optional path prefix) fails the call with
    /// `CourierError.configuration`.
    public var server: URL?
    /// Send the credential to `server` even when it is not one of the API's own origins.
    public var sendsCredentialToServer = false
    /// Status codes, content types and error model this call accepts. Service calls only.
    public var validator: ResponseValidator?
    /// Rewrites of the raw response before decoding, after the service's. Service calls only.
    public var preprocessors: [any ResponsePreprocessor]
    /// Adapters for this call, run after the service's. Service calls only.
    public var adapters: [any RequestAdapter]
    /// Retriers for this call, asked before the service's. Service calls only.
    public var retriers: [any RequestRetrier]
    /// Whether an identical GET in flight is shared (true by default; GET and HEAD only).
    public var deduplicates: Bool
    /// Whether the service's general and real-time parameters are added.
    public var includesGeneralParameters: Bool
    /// A veto checked just before sending: `true` ends the call with `.skipped`, unsent.
    public var skipIf: (@Sendable () -> Bool)?
    /// Skip (`.skipped`, unsent) while the same request (its `RequestIdentity`: method, URL
    /// without real-time parameters, credential, headers, body, response type) with this
    /// option is in flight — the second tap on "like".
    public var skipsWhileInFlight: Bool = false
    /// Which successful payloads mean "no usable data" (none by default): an optional model
    /// gets `nil`, any other `CourierError.noData`, instead of a decoding error.
    public var noData: NoDataRule = []
    /// A veto on the result: `false` drops a decoded response with `.skipped`.
    public var acceptsResult: (@Sendable (ResponseContext) -> Bool)?
    /// Free-form values for monitors, adapters and retriers.
    public var userInfo: UserInfo
    /// Maps this call's final failure to the app's own error, asked before the service's
    /// `ServiceConfiguration.errorMapper` (whose answer counts when this one returns nil).
    public var errorMapper: (@Sendable (CourierError) -> (any Error & Sendable)?)? = nil
    /// What this call does while the service's `networkStatus` says offline (nil: the service's
    /// `whenOffline`).
    public var whenOffline: OfflineBehavior?
    /// Where this call logs (e.g. the logger of the server request it serves); nil: the
    /// client's. Courier adds `courier.call_id` to its metadata.
    public var logger: Logger?
    /// A bounded name for this call's spans and metrics (an OpenAPI `operationId`): the call's
    /// span is named after it and its metrics get an `operation` label. For Courier's own
    /// products (CourierOpenAPI); never a path.
    package var operationName: String?

    /// Per-call settings; every one left out falls back to the service's or the client's.
    /// Each parameter sets the property of the same name.
    public init(
        requestSerializer: (any RequestSerializer)? = nil, headers: HTTPFields = [:], timeout: Duration? = nil,
        maxResponseSize: Int64? = nil, maxRedirects: Int? = nil,
        uploadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        downloadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        cachePolicy: CachePolicy = .useProtocolCachePolicy, cacheLifetime: Duration? = nil, staleIfError: Bool? = nil,
        retryPolicy: RetryPolicy? = nil, interval: RequestInterval? = nil,
        server: URL? = nil, validator: ResponseValidator? = nil, preprocessors: [any ResponsePreprocessor] = [],
        adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = [], deduplicates: Bool = true,
        includesGeneralParameters: Bool = true, skipIf: (@Sendable () -> Bool)? = nil,
        acceptsResult: (@Sendable (ResponseContext) -> Bool)? = nil, userInfo: UserInfo = UserInfo()
    ) {
        self.requestSerializer = requestSerializer
        self.headers = headers
        self.timeout = timeout
        self.maxResponseSize = maxResponseSize
        self.maxRedirects = maxRedirects
        self.uploadProgress = uploadProgress
        self.downloadProgress = downloadProgress
        self.cachePolicy = cachePolicy
        self.cacheLifetime = cacheLifetime
        self.staleIfError = staleIfError
        self.retryPolicy = retryPolicy
        self.interval = interval
        self.server = server
        self.validator = validator
        self.preprocessors = preprocessors
        self.adapters = adapters
        self.retriers = retriers
        self.deduplicates = deduplicates
        self.includesGeneralParameters = includesGeneralParameters
        self.skipIf = skipIf
        self.acceptsResult = acceptsResult
        self.userInfo = userInfo
    }

    /// No overrides.
    public static var `default`: CallOptions { CallOptions() }

    /// A copy with one setting changed: `.default.with(\.timeout, .seconds(5))`.
    public func with<Value>(_ keyPath: WritableKeyPath<CallOptions, Value>, _ value: Value) -> CallOptions {
        var copy = self
        copy[keyPath: keyPath] = value
        return copy
    }

    /// The settings the client applies to each request of this call.
    var requestOptions: RequestOptions {
        RequestOptions(
            timeout: timeout, maxResponseSize: maxResponseSize, maxRedirects: maxRedirects,
            uploadProgress: uploadProgress, downloadProgress: downloadProgress, cachePolicy: cachePolicy,
            cacheLifetime: cacheLifetime, staleIfError: staleIfError)
    }
}

/// The result of a call with everything known about it.
public struct Response<Model: Sendable>: Sendable {
    /// The decoded value.
    public var value: Model
    /// The final response head.
    public var response: HTTPResponse
    /// The final response body, before preprocessing.
    public var body: Data
    /// The request as last sent.
    public var request: HTTPRequest
    /// Whether the response came from the cache.
    public var isFromCache: Bool
    /// Whether a cached response was served past its freshness.
    public var isStale = false
    /// Timings and sizes of the final transfer.
    public var transferMetrics: TransferMetrics
    /// Figures for the whole call.
    public var metrics: CallMetrics
    /// The call's identifier.
    public var callID: CallID

    /// How many times the request was sent.
    public var attempts: Int { metrics.attempts }
    /// The HTTP status.
    public var status: HTTPResponse.Status { response.status }
}

extension CallOptions {
    /// `server`, validated.
    /// - Throws: `CourierError.configuration` when it is not a usable base URL.
    func validatedServer() throws -> BaseURL? {
        try server.map(BaseURL.init)
    }
}
