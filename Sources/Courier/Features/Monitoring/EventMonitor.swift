import HTTPTypes

/// What a monitor is told about a call.
public struct CallEvent: Sendable {
    /// The call's identifier.
    public var id: CallID
    /// The request as sent (or about to be sent) for this attempt.
    public var request: HTTPRequest
    /// The attempt number, 1 for the first send.
    public var attempt: Int
    /// The call's free-form values.
    public var userInfo: UserInfo
    /// The service's network status when the attempt was sent (nil without a status source).
    public var networkStatus: NetworkStatus?
    /// The header fields of the call's service that carry a credential (its client's and its
    /// authentication interceptor's), for monitors that log headers.
    var credentialFieldNames: Set<HTTPField.Name> = []
    /// The query items of the call's service that carry a credential (a multi-part credential's).
    var credentialQueryNames: Set<String> = []

    init(id: CallID, request: HTTPRequest, attempt: Int = 1, userInfo: UserInfo = UserInfo()) {
        self.id = id
        self.request = request
        self.attempt = attempt
        self.userInfo = userInfo
    }
}

/// Timing and size figures for a whole call (all attempts).
public struct CallMetrics: Sendable, Hashable {
    /// How many times the request was sent (0 when it never was).
    public var attempts: Int
    /// From the start of the call to its end.
    public var duration: Duration
    /// Whether the result came from the cache.
    public var isFromCache: Bool
    /// Bytes of the final response body.
    public var responseBytes: Int
    /// Timings and sizes of the final transfer (DNS, connect, TLS, first byte, reuse).
    public var transfer: TransferMetrics?

    init(
        attempts: Int = 0, duration: Duration = .zero, isFromCache: Bool = false, responseBytes: Int = 0,
        transfer: TransferMetrics? = nil
    ) {
        self.attempts = attempts
        self.duration = duration
        self.isFromCache = isFromCache
        self.responseBytes = responseBytes
        self.transfer = transfer
    }
}

/// Sees every step of every call: for logging, metrics, loading indicators.
///
/// One requirement, `handle(_:)`, with every step as a case of ``MonitorEvent``: switch on
/// the cases you need and ignore the rest with `default: break`. It is called on the call's
/// task: keep it fast and never block.
public protocol EventMonitor: Sendable {
    /// One step of a call, or of the client's cache.
    func handle(_ event: MonitorEvent)
}

/// A step seen by an ``EventMonitor``.
public enum MonitorEvent: Sendable {
    /// The call entered the pipeline (before gates, cache and sending).
    case started(CallEvent)
    /// An attempt is about to be sent.
    case sending(CallEvent)
    /// An attempt got a response head.
    case received(CallEvent, HTTPResponse)
    /// An attempt failed and will be retried after `delay`.
    case retrying(CallEvent, after: Duration, because: CourierError)
    /// The call ended: with the final response, or with an error; with the call's figures.
    case finished(CallEvent, Result<HTTPResponse, CourierError>, CallMetrics)
    /// The client's cache did something (hit, miss, revalidation, store, eviction, purge).
    /// URL queries in the event are redacted.
    case cache(CacheEvent)
}

extension EventMonitor {
    // The pipeline's names for each step.
    func didStart(_ event: CallEvent) { handle(.started(event)) }
    func willSend(_ event: CallEvent) { handle(.sending(event)) }
    func didReceive(_ event: CallEvent, response: HTTPResponse) { handle(.received(event, response)) }
    func willRetry(_ event: CallEvent, after delay: Duration, because error: CourierError) {
        handle(.retrying(event, after: delay, because: error))
    }
    func didFinish(_ event: CallEvent, result: Result<HTTPResponse, CourierError>, metrics: CallMetrics) {
        handle(.finished(event, result, metrics))
    }
    func didObserveCache(_ event: CacheEvent) { handle(.cache(event)) }
}

/// Forwards every event to a list of monitors, in order.
struct CompositeEventMonitor: EventMonitor {
    var monitors: [any EventMonitor]

    init(_ monitors: [any EventMonitor]) { self.monitors = monitors }

    func handle(_ event: MonitorEvent) { monitors.forEach { $0.handle(event) } }
}

/// A monitor made of a closure, handy in tests and small apps.
public struct ClosureEventMonitor: EventMonitor {
    private let body: @Sendable (MonitorEvent) -> Void

    /// A monitor that passes every event to `body`.
    /// - Parameter body: called with every event.
    public init(_ body: @escaping @Sendable (MonitorEvent) -> Void) { self.body = body }

    /// A monitor with one closure per kind of event (tests).
    init(
        onStart: (@Sendable (CallEvent) -> Void)? = nil, onSend: (@Sendable (CallEvent) -> Void)? = nil,
        onReceive: (@Sendable (CallEvent, HTTPResponse) -> Void)? = nil,
        onRetry: (@Sendable (CallEvent, Duration, CourierError) -> Void)? = nil,
        onFinish: (@Sendable (CallEvent, Result<HTTPResponse, CourierError>, CallMetrics) -> Void)? = nil,
        onCache: (@Sendable (CacheEvent) -> Void)? = nil
    ) {
        self.body = { event in
            switch event {
            case .started(let call): onStart?(call)
            case .sending(let call): onSend?(call)
            case .received(let call, let response): onReceive?(call, response)
            case .retrying(let call, let delay, let error): onRetry?(call, delay, error)
            case .finished(let call, let result, let metrics): onFinish?(call, result, metrics)
            case .cache(let cache): onCache?(cache)
            }
        }
    }

    /// Passes `event` to the closure.
    public func handle(_ event: MonitorEvent) { body(event) }
}
