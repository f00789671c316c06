import CoreMetrics
import CourierLocking
import HTTPTypes
import Tracing

/// The tracer and metrics factory a client reports to, looked up once, when the client is made.
///
/// With nothing bootstrapped (`InstrumentationSystem`, `MetricsSystem`) both are nil and a call
/// pays one nil check for each: no span, no attribute, no metric handle is made.
struct Telemetry: Sendable {
    let tracer: (any Tracer)?
    let metrics: MetricHandles?
    /// Whether a tracer or a metrics backend is set: read by every call, without a copy of
    /// either.
    let isActive: Bool

    /// - Parameters:
    ///   - tracer: a tracer of the client's own (tests); nil: the bootstrapped one.
    ///   - metricsFactory: a factory of the client's own (tests); nil: the bootstrapped one.
    init(tracer: (any Tracer)?, metricsFactory: (any MetricsFactory)?) {
        let tracer = tracer ?? InstrumentationSystem.tracer
        self.tracer = tracer is NoOpTracer ? nil : tracer
        let factory = metricsFactory ?? MetricsSystem.factory
        metrics = factory is NOOPMetricsHandler ? nil : MetricHandles(factory: factory)
        isActive = self.tracer != nil || metrics != nil
    }
}

/// The metrics of calls, made once per service and method (bounded labels: never a path).
///
/// | name | kind | |
/// | --- | --- | --- |
/// | `courier_request_duration` | timer | a call, first attempt to decoded model; `status` label |
/// | `courier_requests_in_flight` | meter | calls started and not finished |
/// | `courier_retries` | counter | attempts after the first |
/// | `courier_cache_hits`, `courier_cache_misses` | counter | GETs to a cached host |
/// | `courier_request_bytes`, `courier_response_bytes` | counter | bodies sent and received |
/// | `courier_connections_open` | meter | the client's open connections (its pool's size), `service` label only |
/// | `courier_requests_queued` | meter | the client's requests waiting for a connection, `service` label only |
///
/// The two pool meters are set when a call starts and when it ends.
final class MetricHandles: Sendable {
    struct Key: Hashable {
        var service: String
        var method: String
        var operation: String?
    }

    struct Set: Sendable {
        let inFlight: Meter
        let retries: Counter
        let cacheHits: Counter
        let cacheMisses: Counter
        let requestBytes: Counter
        let responseBytes: Counter
        let connections: Meter
        let queued: Meter
        let dimensions: [(String, String)]
    }

    /// The most `service` labels one client reports; the calls of any further service are
    /// labelled `_OTHER`. A service without a name is labelled with its server's host, and a
    /// process calling one host per tenant would otherwise grow its series without limit.
    static let maximumServiceLabels = 100
    static let overflowLabel = "_OTHER"

    private let factory: any MetricsFactory
    private let sets = LockedValue<[Key: Set]>([:])
    /// The `service` labels given out so far (at most `maximumServiceLabels`).
    private let services = LockedValue<Swift.Set<String>>([])
    private let timers = LockedValue<[String: CoreMetrics.Timer]>([:])

    init(factory: any MetricsFactory) { self.factory = factory }

    /// The methods a label may name; any other is `_OTHER` (OpenTelemetry's rule).
    static let knownMethods: Swift.Set<String> = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT",
    ]

    static func label(_ method: HTTPRequest.Method) -> String {
        knownMethods.contains(method.rawValue) ? method.rawValue : overflowLabel
    }

    /// The handles of `service` and `method`, and of `operation` when the call names one (an
    /// OpenAPI `operationId`: bounded by the spec).
    func handles(service: String, method: HTTPRequest.Method, operation: String? = nil) -> Set {
        var key = Key(service: service, method: Self.label(method), operation: operation)
        if let made = sets.withLock({ $0[key] }) { return made }
        key.service = serviceLabel(service)
        if let made = sets.withLock({ $0[key] }) { return made }
        var dimensions = [("service", key.service), ("method", key.method)]
        if let operation { dimensions.append(("operation", operation)) }
        let made = Set(
            inFlight: Meter(label: "courier_requests_in_flight", dimensions: dimensions, factory: factory),
            retries: Counter(label: "courier_retries", dimensions: dimensions, factory: factory),
            cacheHits: Counter(label: "courier_cache_hits", dimensions: dimensions, factory: factory),
            cacheMisses: Counter(label: "courier_cache_misses", dimensions: dimensions, factory: factory),
            requestBytes: Counter(label: "courier_request_bytes", dimensions: dimensions, factory: factory),
            responseBytes: Counter(label: "courier_response_bytes", dimensions: dimensions, factory: factory),
            connections: Meter(label: "courier_connections_open", dimensions: [dimensions[0]], factory: factory),
            queued: Meter(label: "courier_requests_queued", dimensions: [dimensions[0]], factory: factory),
            dimensions: dimensions)
        return sets.withLock { sets in
            if let raced = sets[key] { return raced }
            sets[key] = made
            return made
        }
    }

    /// `service`, or `_OTHER` once `maximumServiceLabels` others are in use.
    private func serviceLabel(_ service: String) -> String {
        services.withLock { services in
            if services.contains(service) { return service }
            guard services.count < Self.maximumServiceLabels else { return Self.overflowLabel }
            services.insert(service)
            return service
        }
    }

    /// The duration timer of a set, for calls that ended with `status` (`2xx`…`5xx`, or an
    /// error code: a bounded set).
    func duration(_ set: Set, status: String) -> CoreMetrics.Timer {
        let dimensions = set.dimensions + [("status", status)]
        let key = dimensions.map { "\($0.0)=\($0.1)" }.joined(separator: ",")
        if let made = timers.withLock({ $0[key] }) { return made }
        let timer = CoreMetrics.Timer(label: "courier_request_duration", dimensions: dimensions, factory: factory)
        return timers.withLock { timers in
            if let raced = timers[key] { return raced }
            timers[key] = timer
            return timer
        }
    }
}

/// Writes a tracer's context (W3C `traceparent`, …) into a request's header fields.
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout HTTPFields) {
        // A value that would split the head is dropped, not sent.
        guard let name = HTTPField.Name(key), !value.contains(where: { $0.isNewline || $0 == "\0" }) else { return }
        fields[name] = value
    }
}
