import Foundation
import HTTPTypes
import Logging
import Tracing

/// What one call reports, from its first step to its result: its logger (the call id in its
/// metadata), its span and each attempt's (OpenTelemetry's HTTP client conventions), and its
/// metrics. Kept by the call's `CallRun`, so used by the call's task only.
///
/// Spans: the call is an `.internal` span named `{method} {service}` (its operation's name,
/// `courier.operation`, when it has one: an OpenAPI `operationId`); each attempt a `.client`
/// span named `{method}`, child of the call's, whose context the tracer injects into the
/// attempt's header fields (W3C `traceparent` with an OpenTelemetry tracer). Attributes:
/// `http.request.method`, `url.full` (secret query values redacted by the one `Redaction`),
/// `server.address`, `server.port`, `http.request.resend_count` (retries),
/// `http.response.status_code`, `error.type` (the status code from 400 on, else the
/// `CourierError` code); failures are recorded as errors with the error status.
struct CallTelemetry {
    /// The call's logger: the call's own (`CallOptions.logger`) or the client's, with
    /// `courier.call_id` in its metadata. Nil when it would be the client's unchanged (no
    /// logger of the call's, no debug level): the call's transfers then fall back to it, and
    /// the call keeps no copy.
    let logger: Logger?
    /// Whether the call logs at debug level, decided once at its start: the other log lines
    /// of the call then cost no read of the handler's level.
    private let logs: Bool
    /// Nil at the usual log levels without a tracer or a metrics backend: then a call makes
    /// and keeps nothing else (one optional reference in its `CallRun`).
    private let active: Active?

    /// The spans, meters and redaction of a call that reports something.
    private final class Active {
        let tracer: (any Tracer)?
        var callSpan: (any Span)?
        var attemptSpan: (any Span)?
        let handles: MetricHandles?
        let metrics: MetricHandles.Set?
        let started: ContinuousClock.Instant?
        /// The client's transport, for the pool meters (nil without metrics).
        let transport: (any Transport)?
        let redaction: Redaction

        init(
            tracer: (any Tracer)?, handles: MetricHandles?, metrics: MetricHandles.Set?,
            transport: (any Transport)?, redaction: Redaction
        ) {
            self.tracer = tracer
            self.handles = handles
            self.metrics = metrics
            started = metrics == nil ? nil : .now
            self.transport = transport
            self.redaction = redaction
        }
    }

    /// Whether the call reports nothing: no debug logs, no span, no metric. Its other methods
    /// then do nothing, and a call need not call them.
    var isQuiet: Bool { active == nil && !logs }

    private init(logger: Logger?, logs: Bool, active: Active?) {
        self.logger = logger
        self.logs = logs
        self.active = active
    }

    /// Starts the call's span, counts it in flight and logs its start.
    ///
    /// A static function, not an initializer: its arguments are borrowed, where an
    /// initializer's are copied by the caller and released by the callee.
    @inline(never)
    static func start(
        client: HTTPClient, service name: String?, server: String, options: CallOptions, id: CallID,
        request: HTTPRequest, credentialFieldNames: Set<HTTPField.Name>, credentialQueryNames: Set<String> = []
    ) -> CallTelemetry {
        let given = options.logger
        let logs = (given?.logLevel ?? client.configuration.logger.logLevel) <= .debug
        guard logs || client.telemetry.isActive else { return CallTelemetry(logger: given, logs: false, active: nil) }
        let telemetry = client.telemetry
        var logger = given ?? client.configuration.logger
        let operation = options.operationName
        // Made only when something will use them: a call pays nothing at the usual log levels
        // without a tracer or metrics backend.
        // The credential's own query items (a multi-part credential's) are secret whatever
        // their names: the attempts' spans show the URL as sent, credential included.
        var redaction =
            logs || telemetry.tracer != nil
            ? client.credentialScope.redaction.adding(credentialFieldNames) : Redaction.default
        if !credentialQueryNames.isEmpty {
            redaction.queryNames.formUnion(credentialQueryNames.map { $0.lowercased() })
        }
        // The service label: its name, else its server's host (bounded, unlike paths).
        let service = name ?? Self.split(server, isHTTPS: false).0
        if logs {
            logger[metadataKey: "courier.call_id"] = "\(id.rawValue)"
            logger.debug(
                "courier: call \(request.method) \(redaction.redactedURL(of: request))",
                metadata: ["courier.service": .string(service)])
        }
        var metrics: MetricHandles.Set?
        if let handles = telemetry.metrics {
            let set = handles.handles(service: service, method: request.method, operation: operation)
            set.inFlight.increment()
            metrics = set
            Self.reportLoad(of: client.transport, to: set)
        }
        let active = Active(
            tracer: telemetry.tracer, handles: telemetry.metrics, metrics: metrics,
            transport: metrics == nil ? nil : client.transport, redaction: redaction)
        if let tracer = telemetry.tracer {
            let span = tracer.startSpan(
                operation ?? "\(request.method.rawValue) \(service)",
                context: InstrumentationContext.current ?? .topLevel,
                ofKind: .internal, at: DefaultTracerClock.now, function: #function, file: #fileID, line: #line)
            Self.describe(request, on: span, redaction: redaction)
            span.attributes["courier.call_id"] = Int(truncatingIfNeeded: id.rawValue)
            if let operation { span.attributes["courier.operation"] = operation }
            active.callSpan = span
        }
        return CallTelemetry(logger: logs || given != nil ? logger : nil, logs: logs, active: active)
    }

    /// An attempt is sent: its span starts, and its context goes into the request's fields.
    /// - Parameter credentialQueryNames: the query items the authentication wrote into this
    ///   attempt when the call could not know them at its start (read per attempt): secret too.
    @inline(never)
    mutating func willSend(_ request: inout PreparedRequest, attempt: Int, credentialQueryNames: Set<String> = []) {
        guard let active else { return }
        if attempt > 1 { active.metrics?.retries.increment() }
        guard let tracer = active.tracer, let callSpan = active.callSpan else { return }
        endAttempt(status: nil, error: nil)
        let span = tracer.startSpan(
            request.head.method.rawValue, context: callSpan.context, ofKind: .client, at: DefaultTracerClock.now,
            function: #function, file: #fileID, line: #line)
        var redaction = active.redaction
        if !credentialQueryNames.isEmpty {
            redaction.queryNames.formUnion(credentialQueryNames.map { $0.lowercased() })
        }
        Self.describe(request.head, on: span, redaction: redaction)
        if attempt > 1 { span.attributes["http.request.resend_count"] = attempt - 1 }
        tracer.inject(span.context, into: &request.head.headerFields, using: HTTPFieldsInjector())
        active.attemptSpan = span
    }

    /// The attempt got an answer (`status`) or failed (`error`).
    mutating func endAttempt(status: Int?, error: CourierError?) {
        guard let active, let span = active.attemptSpan else { return }
        active.attemptSpan = nil
        Self.finish(span, status: status, error: error)
    }

    /// A retry follows.
    func willRetry(after delay: Duration, because error: CourierError) {
        if logs { logger?.debug("courier: retry after \(delay): \(error.code)") }
    }

    /// The call ended with an answer.
    @inline(never)
    mutating func finished(
        status: Int, attempts: Int, request: PreparedRequest, responseBytes: Int, isFromCache: Bool,
        cache: HostScopedCache?
    ) {
        endAttempt(status: isFromCache ? nil : status, error: nil)
        if logs {
            logger?.debug(
                "courier: call ended \(status) after \(attempts) attempt(s)\(isFromCache ? ", from cache" : "")")
        }
        guard let active else { return }
        if let span = active.callSpan {
            active.callSpan = nil
            span.attributes["courier.attempts"] = attempts
            Self.finish(span, status: status, error: nil)
        }
        guard let metrics = active.metrics, let handles = active.handles, let started = active.started else { return }
        metrics.inFlight.decrement()
        Self.reportLoad(of: active.transport, to: metrics)
        if let body = request.body, let count = try? body.contentLength(), count > 0 {
            metrics.requestBytes.increment(by: count)
        }
        if responseBytes > 0 { metrics.responseBytes.increment(by: responseBytes) }
        if isFromCache {
            metrics.cacheHits.increment()
        } else if let cache, request.head.method == .get, let authority = request.head.authority {
            // A GET to a host the cache keeps, answered by the server: a miss.
            let host = Self.split(authority, isHTTPS: false).0.lowercased()
            if case .never = cache.rulePolicy(forHost: host).policy {} else { metrics.cacheMisses.increment() }
        }
        handles.duration(metrics, status: "\(status / 100)xx").recordNanoseconds(
            (ContinuousClock.now - started).nanoseconds)
    }

    /// The call ended with `error`.
    @inline(never)
    mutating func failed(_ error: CourierError, attempts: Int) {
        endAttempt(status: error.response.map { Int($0.status.code) }, error: error)
        if logs { logger?.debug("courier: call failed after \(attempts) attempt(s): \(error.code): \(error.message)") }
        guard let active else { return }
        if let span = active.callSpan {
            active.callSpan = nil
            span.attributes["courier.attempts"] = attempts
            Self.finish(span, status: error.response.map { Int($0.status.code) }, error: error)
        }
        guard let metrics = active.metrics, let handles = active.handles, let started = active.started else { return }
        metrics.inFlight.decrement()
        Self.reportLoad(of: active.transport, to: metrics)
        handles.duration(metrics, status: "\(error.code)").recordNanoseconds(
            (ContinuousClock.now - started).nanoseconds)
    }

    /// Sets the pool meters from the transport's counters (read off the transport's thread).
    private static func reportLoad(of transport: (any Transport)?, to metrics: MetricHandles.Set) {
        guard let load = transport?.load else { return }
        metrics.connections.set(load.connections)
        metrics.queued.set(load.queued)
    }

    // MARK: Spans

    private static func describe(_ request: HTTPRequest, on span: any Span, redaction: Redaction) {
        span.attributes["http.request.method"] = MetricHandles.label(request.method)
        span.attributes["url.full"] = redaction.redactedURL(of: request)
        guard let authority = request.authority else { return }
        let (host, port) = split(authority, isHTTPS: request.scheme?.lowercased() == "https")
        span.attributes["server.address"] = host
        if let port { span.attributes["server.port"] = port }
    }

    private static func finish(_ span: any Span, status: Int?, error: CourierError?) {
        if let status {
            span.attributes["http.response.status_code"] = status
            if status >= 400 {
                span.attributes["error.type"] = "\(status)"
                span.setStatus(SpanStatus(code: .error))
            }
        }
        if let error {
            if status == nil || status! < 400 { span.attributes["error.type"] = "\(error.code)" }
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: error.message))
        }
        span.end()
    }

    /// `host[:port]` (an IPv6 literal in brackets) into its host and port (the scheme's default
    /// when there is none).
    static func split(_ authority: String, isHTTPS: Bool) -> (String, Int?) {
        let defaultPort = isHTTPS ? 443 : 80
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            let host = String(authority[authority.index(after: authority.startIndex)..<close])
            let rest = authority[authority.index(after: close)...]
            return (host, rest.hasPrefix(":") ? Int(rest.dropFirst()) : defaultPort)
        }
        guard let colon = authority.lastIndex(of: ":") else { return (authority, defaultPort) }
        return (String(authority[..<colon]), Int(authority[authority.index(after: colon)...]))
    }
}

extension Duration {
    /// The whole nanoseconds (saturated).
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : scaled + attoseconds / 1_000_000_000
    }
}
