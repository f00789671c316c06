import CoreMetrics
import Foundation
import HTTPTypes
import Logging
import Tracing

extension HTTPClient {
    /// Everything a client needs to know before its first request.
    ///
    /// It holds the default response type (`decoding`), which services and calls may override;
    /// `send` returns raw bytes and needs none.
    public struct Configuration: Sendable {
        /// Where requests without a scheme and authority go (`https://api.example.com/v1`).
        public var baseURL: URL?
        /// The longest a request may take, redirects included (`nil`: no limit).
        public var timeout: Duration?
        /// The longest a connection may take to set up.
        public var connectTimeout: Duration
        /// Fail a transfer when no byte moved for this long (`nil`: never).
        public var stallTimeout: Duration?
        /// Fields added to every request that does not set them itself; those that carry a
        /// credential (Authorization, Cookie, `sensitiveHeaderNames`, …) only to the API's own
        /// origins.
        public var defaultHeaders: HTTPFields
        /// At most this many connections to one host.
        public var maxConnectionsPerHost: Int
        /// At most this many connections in all.
        public var maxConnections: Int
        /// The most redirects a request follows (10 by default); 0 returns the 3xx response
        /// itself. A negative value counts as 0.
        public var maxRedirects: Int
        /// Certificates to trust.
        public var tls: TLSConfiguration
        /// Host names answered without DNS, e.g. a "CDN" host on loopback in tests and demos.
        public var resolve: [ResolveOverride]
        /// Which proxy requests go through: `.none` (the default, whatever `http_proxy` and
        /// friends say), `.environment`, or `.url(_:username:password:bypass:)`.
        public var proxy: Proxy
        /// The largest response body accepted, counted after decoding.
        public var maxResponseSize: Int64
        /// Header names whose values are never logged and are dropped on cross-origin redirects,
        /// in addition to Authorization, Cookie and Proxy-Authorization. They are credentials
        /// for the cache too: part of its identity, and purged on logout.
        public var sensitiveHeaderNames: Set<HTTPField.Name>
        /// Builds the auth header fields from the logged-in credential. The fields it builds
        /// (probed once when the client is made) are part of the cache identity.
        public var authorization: AuthorizationHeader
        /// Origins besides the base URL's that receive the credential (`https://auth.example.com`);
        /// requests to any other origin go without it. A client with neither a base URL nor
        /// credential origins sends the credential to whatever origin a request names.
        public var credentialOrigins: [URL] = []
        /// Where login and logout notifications are observed.
        public var notificationCenter: NotificationCenter
        /// Follow only the login and logout notifications posted for this scope (`nil`: every one).
        public var sessionScope: SessionScope?
        /// Where requests, responses and failures are logged (header secrets redacted).
        public var logger: Logger
        /// Gives the client a cookie jar of its own when `cookieJar` is nil.
        var enablesCookieEngine: Bool
        /// The client's cookies: stored from every response (redirect hops too), sent with every
        /// request, cleared on `logOut()` unless the jar says otherwise. Never shared with
        /// another client through the transport. A service's `ServiceConfiguration.cookieJar` wins for its calls.
        /// One jar given to two clients (a configuration used twice) is one jar for both: each
        /// sends the other's cookies and either's `logOut()` empties it. Give each user's client
        /// a jar of its own, or set `enablesCookieEngine`, which makes one per client.
        public var cookieJar: CookieJar?
        /// The default response type: how `Decodable` models are read when neither the service
        /// (`ServiceConfiguration.decoding`) nor the call (`serializer:`) names one.
        /// Precedence: the call's serializer, then the service's, then this.
        public var decoding: any ModelDecoding = .json
        /// The response cache for chosen hosts (`nil`: no caching). `send` consults it; `stream` does not.
        public var cache: HostScopedCache?
        /// A tracer of this client's own instead of `InstrumentationSystem`'s (tests).
        var tracer: (any Tracer)?
        /// A metrics factory of this client's own instead of `MetricsSystem`'s (tests).
        var metricsFactory: (any MetricsFactory)?

        /// A configuration; every setting has a usable default, so name only what differs.
        /// Values out of range are clamped or refused (`CourierError.configuration`) when the
        /// client is made.
        /// - Parameters:
        ///   - baseURL: where relative requests go.
        ///   - timeout: the longest a request may take, redirects included (nil: no limit).
        ///   - connectTimeout: the longest a connection may take to set up.
        ///   - stallTimeout: fail a transfer when no byte moved for this long (nil: never).
        ///   - defaultHeaders: fields added to every request that does not set them.
        ///   - maxConnectionsPerHost: the most connections to one host.
        ///   - maxConnections: the most connections in all.
        ///   - maxRedirects: the most redirects a request follows (0: none).
        ///   - tls: the certificates to trust.
        ///   - resolve: host names answered without DNS.
        ///   - proxy: the proxy (none by default).
        ///   - maxResponseSize: the largest response body accepted, in bytes.
        ///   - sensitiveHeaderNames: more header names to redact and drop across origins.
        ///   - authorization: how the credential becomes header fields.
        ///   - notificationCenter: where login and logout notifications are observed.
        ///   - logger: where requests and failures are logged.
        ///   - enablesCookieEngine: gives the client a cookie jar of its own.
        ///   - cache: the URL cache for selected hosts (nil: none).
        ///   - sessionScope: which login and logout notifications this client follows.
        public init(
            baseURL: URL? = nil, timeout: Duration? = .seconds(60), connectTimeout: Duration = .seconds(10),
            stallTimeout: Duration? = .seconds(30), defaultHeaders: HTTPFields = [:],
            maxConnectionsPerHost: Int = 8, maxConnections: Int = 64, maxRedirects: Int = 10,
            tls: TLSConfiguration = .init(), resolve: [ResolveOverride] = [], proxy: Proxy = .none,
            maxResponseSize: Int64 = 64 << 20, sensitiveHeaderNames: Set<HTTPField.Name> = [],
            authorization: AuthorizationHeader = .bearer, notificationCenter: NotificationCenter = .default,
            logger: Logger = Logger(label: "courier"), enablesCookieEngine: Bool = false,
            cache: HostScopedCache? = nil, sessionScope: SessionScope? = nil
        ) {
            self.baseURL = baseURL
            self.timeout = timeout
            self.connectTimeout = connectTimeout
            self.stallTimeout = stallTimeout
            self.defaultHeaders = defaultHeaders
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.maxConnections = maxConnections
            self.maxRedirects = maxRedirects
            self.tls = tls
            self.resolve = resolve
            self.proxy = proxy
            self.maxResponseSize = maxResponseSize
            self.sensitiveHeaderNames = sensitiveHeaderNames
            self.authorization = authorization
            self.notificationCenter = notificationCenter
            self.logger = logger
            self.enablesCookieEngine = enablesCookieEngine
            self.cache = cache
            self.sessionScope = sessionScope
        }

        /// The configuration with every value checked (see `ConfigurationBounds`): timeouts
        /// longer than 24 days are cut to 24 days, the redirect count raised to 0.
        /// - Throws: `CourierError.configuration` for a timeout of zero or less (use `nil` for
        ///   none), or a size or connection limit below 1.
        func validated() throws(CourierError) -> Configuration {
            var checked = self
            checked.timeout = try ConfigurationBounds.timeout(timeout, "timeout")
            checked.connectTimeout =
                try ConfigurationBounds.timeout(connectTimeout, "connect timeout") ?? connectTimeout
            checked.stallTimeout = try ConfigurationBounds.timeout(stallTimeout, "stall timeout")
            checked.maxResponseSize = try ConfigurationBounds.size(maxResponseSize, "maximum response size")
            checked.maxConnectionsPerHost = try ConfigurationBounds.size(
                maxConnectionsPerHost, "connection limit per host")
            checked.maxConnections = try ConfigurationBounds.size(maxConnections, "connection limit")
            checked.maxRedirects = max(0, maxRedirects)
            return checked
        }

        /// The transport settings this configuration implies.
        var transportConfiguration: CurlTransport.Configuration {
            CurlTransport.Configuration(
                maxConnectionsPerHost: maxConnectionsPerHost, maxConnections: maxConnections,
                connectTimeout: connectTimeout, caBundlePath: tls.caBundlePath, resolve: resolve, proxy: proxy,
                enablesCookieEngine: enablesCookieEngine)
        }
    }

    /// One `host:port` answered with a fixed address without DNS (libcurl's `CURLOPT_RESOLVE`),
    /// e.g. a "CDN" host name on loopback in tests.
    public struct ResolveOverride: Sendable, Hashable {
        var host: String
        var port: Int
        var address: String

        /// Answers `host:port` with `address`.
        /// - Parameters:
        ///   - host: the host name.
        ///   - port: the port.
        ///   - address: the IP address to connect to.
        public init(host: String, port: Int, address: String = "127.0.0.1") {
            self.host = host
            self.port = port
            self.address = address
        }
    }

    /// Which certificates the client trusts. Verification itself is always on.
    public struct TLSConfiguration: Sendable, Hashable {
        /// A PEM bundle of CA certificates to trust instead of the system store.
        public var caBundlePath: String?

        /// Trust the system store, or only the certificates of a bundle.
        /// - Parameter caBundlePath: a PEM bundle that replaces the system store (nil: the system's).
        public init(caBundlePath: String? = nil) { self.caBundlePath = caBundlePath }
    }

    /// Turns the logged-in credential into header fields.
    public struct AuthorizationHeader: Sendable {
        let build: @Sendable (String) -> [HTTPField]

        /// Fields of your own, e.g. `X-Api-Key: <credential>`.
        public static func custom(_ build: @escaping @Sendable (String) -> [HTTPField]) -> AuthorizationHeader {
            AuthorizationHeader(build: build)
        }

        /// `Authorization: Bearer <credential>`.
        public static let bearer = AuthorizationHeader { [HTTPField(name: .authorization, value: "Bearer \($0)")] }
    }
}
