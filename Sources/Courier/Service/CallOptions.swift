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
    /// The settings, behind one reference: a call keeps its options for all its attempts,
    /// and a copy of a reference is one reference count where a copy of the fields was one per
    /// field (closures, arrays, the logger, the headers). Immutable: setting a property makes
    /// new storage (options are built once and read many times).
    private final class Storage: Sendable {
        let fields: Fields
        /// The settings the client applies to each request (`requestOptions`), made with the
        /// storage: every call with these options reads them, none builds them.
        let requestOptions: RequestOptions

        init(_ fields: Fields) {
            self.fields = fields
            requestOptions = RequestOptions(
                timeout: fields.timeout, maxResponseSize: fields.maxResponseSize, maxRedirects: fields.maxRedirects,
                uploadProgress: fields.uploadProgress, downloadProgress: fields.downloadProgress,
                cachePolicy: fields.cachePolicy, cacheLifetime: fields.cacheLifetime, staleIfError: fields.staleIfError)
        }
    }

    struct Fields: Sendable {
        var requestSerializer: (any RequestSerializer)?
        var headers: HTTPFields
        var timeout: Duration?
        var maxResponseSize: Int64?
        var maxRedirects: Int?
        var uploadProgress: (@Sendable (TransferProgress) -> Void)?
        var downloadProgress: (@Sendable (TransferProgress) -> Void)?
        var cachePolicy: CachePolicy
        var cacheLifetime: Duration?
        var staleIfError: Bool?
        var retryPolicy: RetryPolicy?
        var interval: RequestInterval?
        var server: URL?
        var sendsCredentialToServer: Bool = false
        var validator: ResponseValidator?
        var preprocessors: [any ResponsePreprocessor]
        var adapters: [any RequestAdapter]
        var retriers: [any RequestRetrier]
        var deduplicates: Bool
        var includesGeneralParameters: Bool
        var skipIf: (@Sendable () -> Bool)?
        var skipsWhileInFlight: Bool = false
        var noData: NoDataRule = []
        var acceptsResult: (@Sendable (ResponseContext) -> Bool)?
        var userInfo: UserInfo
        var errorMapper: (@Sendable (CourierError) -> (any Error & Sendable)?)? = nil
        var whenOffline: OfflineBehavior?
        var logger: Logger?
        var operationName: String?
        var keepsAnswerAsItCame = false
    }

    private var storage: Storage

    /// How parameters are encoded (`.json`, `.form`, `.multipart`, …). Service calls only.
    public var requestSerializer: (any RequestSerializer)? {
        get { storage.fields.requestSerializer }
        set { set(\.requestSerializer, newValue) }
    }
    /// Header fields for this call, on top of the service's defaults. Service calls only.
    public var headers: HTTPFields {
        get { storage.fields.headers }
        set { set(\.headers, newValue) }
    }
    /// The total timeout of one attempt (redirects included); replaces the client's.
    public var timeout: Duration? {
        get { storage.fields.timeout }
        set { set(\.timeout, newValue) }
    }
    /// Replaces the client's maximum response size.
    public var maxResponseSize: Int64? {
        get { storage.fields.maxResponseSize }
        set { set(\.maxResponseSize, newValue) }
    }
    /// Replaces the client's `maxRedirects` (0: redirects are not followed).
    public var maxRedirects: Int? {
        get { storage.fields.maxRedirects }
        set { set(\.maxRedirects, newValue) }
    }
    /// Called on the transport's thread as the body goes out; keep it cheap.
    public var uploadProgress: (@Sendable (TransferProgress) -> Void)? {
        get { storage.fields.uploadProgress }
        set { set(\.uploadProgress, newValue) }
    }
    /// Called on the transport's thread as the body comes in; keep it cheap.
    public var downloadProgress: (@Sendable (TransferProgress) -> Void)? {
        get { storage.fields.downloadProgress }
        set { set(\.downloadProgress, newValue) }
    }
    /// How this call uses the client's cache: `.returnCacheDataElseLoad`, …
    public var cachePolicy: CachePolicy {
        get { storage.fields.cachePolicy }
        set { set(\.cachePolicy, newValue) }
    }
    /// Cache this call's response for this long, whatever its caching headers say.
    public var cacheLifetime: Duration? {
        get { storage.fields.cacheLifetime }
        set { set(\.cacheLifetime, newValue) }
    }
    /// Serve a stale cached response when the network fails or answers 5xx (nil: the cache's setting).
    public var staleIfError: Bool? {
        get { storage.fields.staleIfError }
        set { set(\.staleIfError, newValue) }
    }
    /// When and how failed attempts are retried. Service calls only.
    public var retryPolicy: RetryPolicy? {
        get { storage.fields.retryPolicy }
        set { set(\.retryPolicy, newValue) }
    }
    /// The shortest time between two calls to this endpoint; off by default. Service calls only.
    public var interval: RequestInterval? {
        get { storage.fields.interval }
        set { set(\.interval, newValue) }
    }
    /// Send this call to another server than the service's (no failover for it). Unless it is
    /// one of the API's own origins (the client's base URL or `credentialOrigins`, the
    /// service's servers), it gets no credential, unless `sendsCredentialToServer` is set.
    /// Service calls only (`send` takes the URL in its request). A URL that is not a usable base
    /// URL (`http` or `https`, a host, an optional path prefix) fails the call with
    /// `CourierError.configuration`.
    public var server: URL? {
        get { storage.fields.server }
        set { set(\.server, newValue) }
    }
    /// Send the credential to `server` even when it is not one of the API's own origins.
    public var sendsCredentialToServer: Bool {
        get { storage.fields.sendsCredentialToServer }
        set { set(\.sendsCredentialToServer, newValue) }
    }
    /// Status codes, content types and error model this call accepts. Service calls only.
    public var validator: ResponseValidator? {
        get { storage.fields.validator }
        set { set(\.validator, newValue) }
    }
    /// Rewrites of the raw response before decoding, after the service's. Service calls only.
    public var preprocessors: [any ResponsePreprocessor] {
        get { storage.fields.preprocessors }
        set { set(\.preprocessors, newValue) }
    }
    /// Adapters for this call, run after the service's. Service calls only.
    public var adapters: [any RequestAdapter] {
        get { storage.fields.adapters }
        set { set(\.adapters, newValue) }
    }
    /// Retriers for this call, asked before the service's. Service calls only.
    public var retriers: [any RequestRetrier] {
        get { storage.fields.retriers }
        set { set(\.retriers, newValue) }
    }
    /// Whether an identical GET in flight is shared (true by default; GET and HEAD only; not
    /// by calls with another `timeout`, `maxResponseSize`, `maxRedirects`, `staleIfError` or
    /// `cacheLifetime`, nor by calls with `adapters` or progress handlers of their own).
    public var deduplicates: Bool {
        get { storage.fields.deduplicates }
        set { set(\.deduplicates, newValue) }
    }
    /// Whether the service's general and real-time parameters are added.
    public var includesGeneralParameters: Bool {
        get { storage.fields.includesGeneralParameters }
        set { set(\.includesGeneralParameters, newValue) }
    }
    /// A veto checked just before sending: `true` ends the call with `.skipped`, unsent.
    public var skipIf: (@Sendable () -> Bool)? {
        get { storage.fields.skipIf }
        set { set(\.skipIf, newValue) }
    }
    /// Skip (`.skipped`, unsent) while the same request (its `RequestIdentity`: method, URL
    /// without real-time parameters, credential, headers, body, response type) with this
    /// option is in flight — the second tap on "like".
    public var skipsWhileInFlight: Bool {
        get { storage.fields.skipsWhileInFlight }
        set { set(\.skipsWhileInFlight, newValue) }
    }
    /// Which successful payloads mean "no usable data" (none by default): an optional model
    /// gets `nil`, any other `CourierError.noData`, instead of a decoding error.
    public var noData: NoDataRule {
        get { storage.fields.noData }
        set { set(\.noData, newValue) }
    }
    /// A veto on the result: `false` drops a decoded response with `.skipped`.
    public var acceptsResult: (@Sendable (ResponseContext) -> Bool)? {
        get { storage.fields.acceptsResult }
        set { set(\.acceptsResult, newValue) }
    }
    /// Free-form values for monitors, adapters and retriers.
    public var userInfo: UserInfo {
        get { storage.fields.userInfo }
        set { set(\.userInfo, newValue) }
    }
    /// Maps this call's final failure to the app's own error, asked before the service's
    /// `ServiceConfiguration.errorMapper` (whose answer counts when this one returns nil).
    public var errorMapper: (@Sendable (CourierError) -> (any Error & Sendable)?)? {
        get { storage.fields.errorMapper }
        set { set(\.errorMapper, newValue) }
    }
    /// What this call does while the service's `networkStatus` says offline (nil: the service's
    /// `whenOffline`).
    public var whenOffline: OfflineBehavior? {
        get { storage.fields.whenOffline }
        set { set(\.whenOffline, newValue) }
    }
    /// Where this call logs (e.g. the logger of the server request it serves); nil: the
    /// client's. Courier adds `courier.call_id` to its metadata.
    public var logger: Logger? {
        get { storage.fields.logger }
        set { set(\.logger, newValue) }
    }
    /// A bounded name for this call's spans and metrics (an OpenAPI `operationId`): the call's
    /// span is named after it and its metrics get an `operation` label. For Courier's own
    /// products (CourierOpenAPI); never a path.
    package var operationName: String? {
        get { storage.fields.operationName }
        set { set(\.operationName, newValue) }
    }

    /// The service's envelope rule and preprocessors leave the answer as it came: a call
    /// whose serializer reads the wire format itself (an OpenAPI operation, which its spec
    /// describes). The call's own preprocessors still apply.
    package var keepsAnswerAsItCame: Bool {
        get { storage.fields.keepsAnswerAsItCame }
        set { set(\.keepsAnswerAsItCame, newValue) }
    }

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
        storage = Storage(
            Fields(
                requestSerializer: requestSerializer, headers: headers, timeout: timeout,
                maxResponseSize: maxResponseSize, maxRedirects: maxRedirects, uploadProgress: uploadProgress,
                downloadProgress: downloadProgress, cachePolicy: cachePolicy, cacheLifetime: cacheLifetime,
                staleIfError: staleIfError, retryPolicy: retryPolicy, interval: interval, server: server,
                validator: validator, preprocessors: preprocessors, adapters: adapters, retriers: retriers,
                deduplicates: deduplicates, includesGeneralParameters: includesGeneralParameters, skipIf: skipIf,
                acceptsResult: acceptsResult, userInfo: userInfo))
    }

    /// One setting changed, in new storage: copies of these options made before keep theirs.
    private mutating func set<Value>(_ field: WritableKeyPath<Fields, Value>, _ value: Value) {
        var fields = storage.fields
        fields[keyPath: field] = value
        storage = Storage(fields)
    }

    /// The identity of these options' storage: options with the same one are the same
    /// options (setting a property makes new storage).
    var storageIdentity: ObjectIdentifier { ObjectIdentifier(storage) }

    /// Whether these are the default options (`.default`'s storage, which lives as long as
    /// the process).
    var isDefault: Bool { storage === Self.noOverrides.storage }

    /// The storage itself, for a weak reference to it (`CallPlanCache`).
    var storageObject: any AnyObject & Sendable { storage }

    /// No overrides.
    public static var `default`: CallOptions { noOverrides }

    /// `default`'s one storage: a call with the default options allocates none.
    private static let noOverrides = CallOptions()

    /// A copy with one setting changed: `.default.with(\.timeout, .seconds(5))`.
    public func with<Value>(_ keyPath: WritableKeyPath<CallOptions, Value>, _ value: Value) -> CallOptions {
        var copy = self
        copy[keyPath: keyPath] = value
        return copy
    }

    /// The settings the client applies to each request of this call.
    var requestOptions: RequestOptions { storage.requestOptions }

    /// Every setting as stored, for the mirror (`Configuration+Mirror.swift`).
    var storedFields: Fields { storage.fields }
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
