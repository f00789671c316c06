import Foundation
import HTTPTypes
import Logging

/// What the client applies to one request: the transport-level part of `CallOptions`, with
/// the service's decision on the credential. Internal: callers set these on `CallOptions`.
struct RequestOptions: Sendable {
    /// Replaces the client's total timeout (redirects included).
    var timeout: Duration?
    /// Replaces the client's maximum response size.
    var maxResponseSize: Int64?
    /// Replaces the client's `maxRedirects`.
    var maxRedirects: Int?
    /// More header names to redact in logs and drop on cross-origin redirects.
    var sensitiveHeaderNames: Set<HTTPField.Name>
    /// Query items that carry a credential (a service's multi-part credential): digested in
    /// what the cache stores.
    var credentialQueryNames: Set<String> = []
    /// Query items the service added to this attempt only (its real-time parameters): sent,
    /// but left out of the cache's key.
    var realTimeQueryNames: Set<String> = []
    /// Called on the transport's thread as the body goes out; keep it cheap.
    var uploadProgress: (@Sendable (TransferProgress) -> Void)?
    /// Called on the transport's thread as the body comes in; keep it cheap.
    var downloadProgress: (@Sendable (TransferProgress) -> Void)?
    /// How this call uses the client's cache.
    var cachePolicy: CachePolicy
    /// Cache this call's response for this long, whatever its caching headers say.
    var cacheLifetime: Duration?
    /// Serve a stale cached response when the network fails or answers 5xx (nil: the cache's setting).
    var staleIfError: Bool?
    /// Cookies for this call: the jar's cookies are sent on every hop (recomputed for each
    /// redirect target, unless the request already carries a `Cookie` header on its first hop),
    /// and every hop's `Set-Cookie` is stored, a redirect's included.
    var cookieJar: CookieJar?
    /// Whether the client adds its credential: a service decides for its calls (its servers
    /// are the API's); `nil` lets the client decide by its own origins.
    var sendsCredential: Bool?
    /// The client's settings as the call found them when it started (a service's call keeps
    /// one snapshot for all its attempts); nil: the client's settings when the request starts.
    var clientSettings: HTTPClient.LiveSettings?
    /// Answered from the cache only, as `Cache-Control: only-if-cached` asks: a fresh entry (or
    /// one the request's own directives accept), else `CourierError.notCached`; nothing is sent.
    /// For a service call while offline (`ServiceCore.cachedWhileOffline`).
    var onlyIfCached = false

    init(
        timeout: Duration? = nil, maxResponseSize: Int64? = nil, maxRedirects: Int? = nil,
        sensitiveHeaderNames: Set<HTTPField.Name> = [],
        uploadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        downloadProgress: (@Sendable (TransferProgress) -> Void)? = nil,
        cachePolicy: CachePolicy = .useProtocolCachePolicy, cacheLifetime: Duration? = nil, staleIfError: Bool? = nil,
        cookieJar: CookieJar? = nil
    ) {
        self.timeout = timeout
        self.maxResponseSize = maxResponseSize
        self.maxRedirects = maxRedirects
        self.sensitiveHeaderNames = sensitiveHeaderNames
        self.uploadProgress = uploadProgress
        self.downloadProgress = downloadProgress
        self.cachePolicy = cachePolicy
        self.cacheLifetime = cacheLifetime
        self.staleIfError = staleIfError
        self.cookieJar = cookieJar
    }
}

/// What a service call gives each of its transfers besides their options: apart from them, so
/// that the options a call's plan made are sent as they are, not copied for each call.
struct TransferContext: Sendable {
    /// The scope of the service call the request belongs to (see `CancellationScope`).
    var scope: CancellationScope?
    /// The logger of the call the request belongs to (its id in the metadata); nil: the client's.
    var logger: Logger?
    /// The client's session the call began in (`HTTPClient.sessionGeneration`): a request made
    /// after that session ended is refused, not sent with the credential of a later one.
    var session: UInt64?

    /// A request of no service call.
    static let none = TransferContext()
}
