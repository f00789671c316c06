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

    public init(id: CallID, request: HTTPRequest, attempt: Int = 1, userInfo: UserInfo = UserInfo()) {
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

    public init(
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
/// All methods have empty default implementations; implement the ones you need. They are
/// called on the call's task: keep them fast and never block.
public protocol EventMonitor: Sendable {
    /// The call entered the pipeline (before gates, cache and sending).
    func didStart(_ event: CallEvent)
    /// An attempt is about to be sent.
    func willSend(_ event: CallEvent)
    /// An attempt got a response head.
    func didReceive(_ event: CallEvent, response: HTTPResponse)
    /// An attempt failed and will be retried after `delay`.
    func willRetry(_ event: CallEvent, after delay: Duration, because error: CourierError)
    /// The call ended: with the final response, or with an error.
    func didFinish(_ event: CallEvent, result: Result<HTTPResponse, CourierError>, metrics: CallMetrics)
    /// The client's cache did something (hit, miss, revalidation, store, eviction, purge).
    /// URL queries in the event are redacted.
    func didObserveCache(_ event: CacheEvent)
}

extension EventMonitor {
    public func didStart(_ event: CallEvent) {}
    public func willSend(_ event: CallEvent) {}
    public func didReceive(_ event: CallEvent, response: HTTPResponse) {}
    public func willRetry(_ event: CallEvent, after delay: Duration, because error: CourierError) {}
    public func didFinish(_ event: CallEvent, result: Result<HTTPResponse, CourierError>, metrics: CallMetrics) {}
    public func didObserveCache(_ event: CacheEvent) {}
}

/// Forwards every event to a list of monitors, in order.
public struct CompositeEventMonitor: EventMonitor {
    public var monitors: [any EventMonitor]

    public init(_ monitors: [any EventMonitor]) { self.monitors = monitors }

    public func didStart(_ event: CallEvent) { monitors.forEach { $0.didStart(event) } }
    public func willSend(_ event: CallEvent) { monitors.forEach { $0.willSend(event) } }
    public func didReceive(_ event: CallEvent, response: HTTPResponse) {
        monitors.forEach { $0.didReceive(event, response: response) }
    }
    public func willRetry(_ event: CallEvent, after delay: Duration, because error: CourierError) {
        monitors.forEach { $0.willRetry(event, after: delay, because: error) }
    }
    public func didFinish(_ event: CallEvent, result: Result<HTTPResponse, CourierError>, metrics: CallMetrics) {
        monitors.forEach { $0.didFinish(event, result: result, metrics: metrics) }
    }
    public func didObserveCache(_ event: CacheEvent) { monitors.forEach { $0.didObserveCache(event) } }
}

/// A monitor made of closures, handy in tests and small apps.
public struct ClosureEventMonitor: EventMonitor {
    public var onStart: (@Sendable (CallEvent) -> Void)?
    public var onSend: (@Sendable (CallEvent) -> Void)?
    public var onReceive: (@Sendable (CallEvent, HTTPResponse) -> Void)?
    public var onRetry: (@Sendable (CallEvent, Duration, CourierError) -> Void)?
    public var onFinish: (@Sendable (CallEvent, Result<HTTPResponse, CourierError>, CallMetrics) -> Void)?
    public var onCache: (@Sendable (CacheEvent) -> Void)?

    public init(
        onStart: (@Sendable (CallEvent) -> Void)? = nil, onSend: (@Sendable (CallEvent) -> Void)? = nil,
        onReceive: (@Sendable (CallEvent, HTTPResponse) -> Void)? = nil,
        onRetry: (@Sendable (CallEvent, Duration, CourierError) -> Void)? = nil,
        onFinish: (@Sendable (CallEvent, Result<HTTPResponse, CourierError>, CallMetrics) -> Void)? = nil,
        onCache: (@Sendable (CacheEvent) -> Void)? = nil
    ) {
        self.onStart = onStart
        self.onSend = onSend
        self.onReceive = onReceive
        self.onRetry = onRetry
        self.onFinish = onFinish
        self.onCache = onCache
    }

    public func didStart(_ event: CallEvent) { onStart?(event) }
    public func willSend(_ event: CallEvent) { onSend?(event) }
    public func didReceive(_ event: CallEvent, response: HTTPResponse) { onReceive?(event, response) }
    public func willRetry(_ event: CallEvent, after delay: Duration, because error: CourierError) {
        onRetry?(event, delay, error)
    }
    public func didFinish(_ event: CallEvent, result: Result<HTTPResponse, CourierError>, metrics: CallMetrics) {
        onFinish?(event, result, metrics)
    }
    public func didObserveCache(_ event: CacheEvent) { onCache?(event) }
}
