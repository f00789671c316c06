import Dispatch
import HTTPTypes
import Synchronization

/// What every call of a service starts from; share one value between services for a
/// global configuration, and override any part of it per call with `CallOptions`.
///
/// The reference-type members (`servers`, `cookieJar`, `intervalGate`, the deduplicator,
/// the authentication coordinator) are shared by every service holding the same value.
public struct ServiceConfiguration: Sendable {
    /// The service's name in metrics, spans and logs (`users`); nil: its server's host.
    public var name: String?
    /// The servers calls go to, with failover and environments; nil uses the client's base URL.
    public var servers: ServerPool?
    /// Header fields for every call (a call's own headers win).
    public var headers: HTTPFields
    /// Query items added to every call (device, channel, OS version, …).
    public var generalParameters: [(name: String, value: String)]
    /// Query items computed for each call as it is sent (timestamp, network type, …).
    public var realTimeParameters: (@Sendable () -> [(name: String, value: String)])?
    /// How parameters are encoded when a call names no serializer.
    public var requestSerializer: any RequestSerializer
    /// How `Decodable` models are read when a call names no serializer; nil (the default)
    /// uses the client's default response type, `HTTPClient.Configuration.decoding`.
    public var decoding: (any ModelDecoding)?
    /// Validation and preprocessing (an envelope, an XSSI prefix) for every call.
    public var pipeline: ResponsePipeline
    /// The retry policy of calls that name none.
    public var retryPolicy: RetryPolicy
    /// Adapters of every call, in order, before the call's own.
    public var adapters: [any RequestAdapter]
    /// Retriers of every call, asked after the call's own.
    public var retriers: [any RequestRetrier]
    /// Attaches and refreshes the credential (a token, or several parts); follows the client's
    /// login/logout notifications.
    public var authentication: (any CredentialAuthentication)?
    /// The body-level outcome rule (an envelope's code): success, retry, refresh, failure.
    public var envelope: EnvelopeRule? = nil
    /// Signs every attempt sent to the API's own servers.
    public var signer: RequestSigner? = nil
    /// Sees every step of every call.
    public var monitors: [any EventMonitor]
    /// Cookies of this API, cleared on logout; nil: the client's jar
    /// (`HTTPClient.Configuration.cookieJar`), when it has one. Shared by every service holding
    /// this value: give each user's services a jar of their own.
    public var cookieJar: CookieJar?
    /// Enforces request intervals (`CallOptions.interval`); services holding the same gate share
    /// their intervals. `RedisFleet.intervalGate()` (CourierRedis) enforces them across processes.
    public var intervalGate: RequestIntervalGate
    /// The endpoints of calls in flight with `skipsWhileInFlight`.
    var inFlightGuard = InFlightGuard()
    /// Shares identical GETs in flight.
    var deduplicator: InFlightDeduplicator<HTTPClient.Response>
    /// The time source for back-off, intervals and failover.
    var clock: any ServiceClock
    /// Where the callback API delivers, unless a call says otherwise: by default one serial
    /// queue shared by all services, so handlers run in completion order. (Not `.main`: on
    /// Linux the main queue runs only when the main thread runs `dispatchMain()` or a run
    /// loop, which command-line tools and servers usually do not.)
    public var callbackQueue: DispatchQueue
    /// The serial queue the callback API uses when nothing else is configured.
    public static let defaultCallbackQueue = DispatchQueue(label: "courier.callbacks")
    /// The most times one call is sent, whatever retriers and the retry policy say.
    public var maximumAttempts: Int
    /// Turns a call's final failure into the app's own error (`401` → `AuthError.sessionExpired`),
    /// carried by the `CourierError` and read with `error.domain(as:)`; nil keeps the failure
    /// as it is. Runs once per call, after retries, refresh and failover. A call's own
    /// `CallOptions.errorMapper` is asked first.
    public var errorMapper: (@Sendable (CourierError) -> (any Error & Sendable)?)? = nil
    /// Where calls learn whether the device is online (a `NetworkMonitor`, or a source of your
    /// own); nil: calls never ask. Monitors see its status in `CallEvent.networkStatus`.
    public var networkStatus: (any NetworkStatusSource)?
    /// What a call does before each attempt while `networkStatus` says offline; a call's
    /// `CallOptions.whenOffline` wins.
    public var whenOffline: OfflineBehavior = .proceed

    /// A service's defaults; every one left out has a usable default. Each parameter sets
    /// the property of the same name.
    public init(
        servers: ServerPool? = nil, headers: HTTPFields = [:],
        generalParameters: [(name: String, value: String)] = [],
        realTimeParameters: (@Sendable () -> [(name: String, value: String)])? = nil,
        requestSerializer: any RequestSerializer = .json, decoding: (any ModelDecoding)? = nil,
        pipeline: ResponsePipeline = .default, retryPolicy: RetryPolicy = .default,
        adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = [],
        authentication: (any CredentialAuthentication)? = nil, monitors: [any EventMonitor] = [],
        cookieJar: CookieJar? = nil, callbackQueue: DispatchQueue = ServiceConfiguration.defaultCallbackQueue,
        maximumAttempts: Int = 10
    ) {
        self.init(
            servers: servers, headers: headers, generalParameters: generalParameters,
            realTimeParameters: realTimeParameters, requestSerializer: requestSerializer, decoding: decoding,
            pipeline: pipeline, retryPolicy: retryPolicy, adapters: adapters, retriers: retriers,
            authentication: authentication, monitors: monitors, cookieJar: cookieJar, intervalGate: nil,
            deduplicator: InFlightDeduplicator(), clock: .system, callbackQueue: callbackQueue,
            maximumAttempts: maximumAttempts)
    }

    /// The same, with the gates and the clock injected (tests).
    init(
        servers: ServerPool? = nil, headers: HTTPFields = [:],
        generalParameters: [(name: String, value: String)] = [],
        realTimeParameters: (@Sendable () -> [(name: String, value: String)])? = nil,
        requestSerializer: any RequestSerializer = .json, decoding: (any ModelDecoding)? = nil,
        pipeline: ResponsePipeline = .default, retryPolicy: RetryPolicy = .default,
        adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = [],
        authentication: (any CredentialAuthentication)? = nil, monitors: [any EventMonitor] = [],
        cookieJar: CookieJar? = nil, intervalGate: RequestIntervalGate? = nil,
        deduplicator: InFlightDeduplicator<HTTPClient.Response> = InFlightDeduplicator(),
        clock: any ServiceClock = .system, callbackQueue: DispatchQueue = ServiceConfiguration.defaultCallbackQueue,
        maximumAttempts: Int = 10
    ) {
        self.servers = servers
        self.headers = headers
        self.generalParameters = generalParameters
        self.realTimeParameters = realTimeParameters
        self.requestSerializer = requestSerializer
        self.decoding = decoding
        self.pipeline = pipeline
        self.retryPolicy = retryPolicy
        self.adapters = adapters
        self.retriers = retriers
        self.authentication = authentication
        self.monitors = monitors
        self.cookieJar = cookieJar
        self.intervalGate = intervalGate ?? RequestIntervalGate(clock: clock)
        self.deduplicator = deduplicator
        self.clock = clock
        self.callbackQueue = callbackQueue
        self.maximumAttempts = max(1, maximumAttempts)
    }
}

/// The requests (by their `RequestIdentity`) with a guarded call in flight.
final class InFlightGuard: Sendable {
    private let keys = LockedValue<Set<String>>([])

    init() {}

    /// Marks `key` busy. - Returns: false when it already was.
    func enter(_ key: String) -> Bool { keys.withLock { $0.insert(key).inserted } }

    func leave(_ key: String) { _ = keys.withLock { $0.remove(key) } }

    /// The number of endpoints busy.
    var count: Int { keys.withLock { $0.count } }
}
