import Foundation
import HTTPTypes
import Logging

/// Per-call settings; each one left nil falls back to the service's configuration.
public struct CallOptions: Sendable {
    /// How parameters are encoded (`.json`, `.form`, `.multipart`, …).
    public var requestSerializer: (any RequestSerializer)?
    /// Header fields for this call, on top of the service's defaults.
    public var headers: HTTPFields
    /// The total timeout of one attempt (redirects included). Kept in `transport`, so the
    /// setting lives in one place: `options.timeout` and `options.transport.timeout` are one.
    public var timeout: Duration? {
        get { transport.timeout }
        set { transport.timeout = newValue }
    }
    /// When and how failed attempts are retried.
    public var retryPolicy: RetryPolicy?
    /// The shortest time between two calls to this endpoint; off by default.
    public var interval: RequestInterval?
    /// Send this call to another server than the service's (no failover for it). Unless it is
    /// one of the API's own origins (the client's base URL or `credentialOrigins`, the
    /// service's servers), it gets no credential, unless `sendsCredentialToServer` is set.
    public var server: BaseURL?
    /// Send the credential to `server` even when it is not one of the API's own origins.
    public var sendsCredentialToServer = false
    /// Status codes, content types and error model this call accepts.
    public var validator: ResponseValidator?
    /// Rewrites of the raw response before decoding, after the service's.
    public var preprocessors: [any ResponsePreprocessor]
    /// Adapters for this call, run after the service's.
    public var adapters: [any RequestAdapter]
    /// Retriers for this call, asked before the service's.
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
    /// Transport-level settings (connect and stall timeouts, progress, size cap).
    public var transport: RequestOptions
    /// What this call does while the service's `networkStatus` says offline (nil: the service's
    /// `whenOffline`).
    public var whenOffline: OfflineBehavior?
    /// Where this call logs (e.g. the logger of the server request it serves); nil: the
    /// client's. Courier adds `courier.call_id` to its metadata.
    public var logger: Logger?

    public init(
        requestSerializer: (any RequestSerializer)? = nil, headers: HTTPFields = [:], timeout: Duration? = nil,
        retryPolicy: RetryPolicy? = nil, interval: RequestInterval? = nil, server: BaseURL? = nil,
        validator: ResponseValidator? = nil, preprocessors: [any ResponsePreprocessor] = [],
        adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = [], deduplicates: Bool = true,
        includesGeneralParameters: Bool = true, skipIf: (@Sendable () -> Bool)? = nil,
        acceptsResult: (@Sendable (ResponseContext) -> Bool)? = nil, userInfo: UserInfo = UserInfo(),
        transport: RequestOptions = RequestOptions()
    ) {
        self.requestSerializer = requestSerializer
        self.headers = headers
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
        self.transport = transport
        if let timeout { self.transport.timeout = timeout }
    }

    /// No overrides.
    public static var `default`: CallOptions { CallOptions() }

    /// The cache policy of this call (kept in `transport`): `.returnCacheDataElseLoad`, …
    public var cachePolicy: CachePolicy {
        get { transport.cachePolicy }
        set { transport.cachePolicy = newValue }
    }

    /// A copy with one setting changed: `.default.with(\.timeout, .seconds(5))`.
    public func with<Value>(_ keyPath: WritableKeyPath<CallOptions, Value>, _ value: Value) -> CallOptions {
        var copy = self
        copy[keyPath: keyPath] = value
        return copy
    }

    /// A copy that decodes refused responses' bodies into `type`, available from
    /// `CourierError.errorModel(as:)`.
    public func decodingErrors<E: Decodable & Sendable>(as type: E.Type) -> CallOptions {
        var copy = self
        copy.validator = (validator ?? .default).decodingErrors(as: type)
        return copy
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
