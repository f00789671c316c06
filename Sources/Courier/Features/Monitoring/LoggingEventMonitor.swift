import HTTPTypes
import Logging

/// Logs every call through swift-log, with credentials redacted.
///
/// Start, send, retry and finish at `.debug` (failures at `.warning`); header lines at
/// `.trace`. Authorization, cookies, every credential field of the service's client and
/// authentication interceptor, and secret query parameters never reach the log.
public struct LoggingEventMonitor: EventMonitor {
    var logger: Logger
    /// What is redacted; the credential fields of the call's service are added to it.
    var redaction: Redaction
    /// Whether header fields are logged (at `.trace`).
    var logsHeaders: Bool

    /// A monitor that logs each call with `logger`, secrets redacted.
    /// - Parameters:
    ///   - logger: where lines go.
    ///   - sensitiveHeaderNames: header names redacted besides Authorization, cookies, the
    ///     common API-key headers and the service's credential fields.
    ///   - logsHeaders: whether header fields are logged (at `.trace`).
    public init(
        logger: Logger = Logger(label: "courier.service"), sensitiveHeaderNames: Set<HTTPField.Name> = [],
        logsHeaders: Bool = true
    ) {
        self.init(logger: logger, redaction: Redaction.default.adding(sensitiveHeaderNames), logsHeaders: logsHeaders)
    }

    init(logger: Logger = Logger(label: "courier.service"), redaction: Redaction, logsHeaders: Bool = true) {
        self.logger = logger
        self.redaction = redaction
        self.logsHeaders = logsHeaders
    }

    private func line(_ event: CallEvent) -> String {
        var redaction = redaction
        redaction.queryNames.formUnion(event.credentialQueryNames.map { $0.lowercased() })
        return "\(event.id) \(event.request.method.rawValue) \(redaction.redactedURL(of: event.request))"
    }

    private func logSending(_ event: CallEvent) {
        logger.debug("→ \(line(event)) attempt \(event.attempt)")
        if logsHeaders, logger.logLevel <= .trace {
            for header in redaction.adding(event.credentialFieldNames).redact(event.request.headerFields) {
                logger.trace("→ \(event.id) \(header)")
            }
        }
    }

    private func logReceived(_ event: CallEvent, response: HTTPResponse) {
        logger.debug("← \(line(event)) \(response.status.code) \(Redaction.quoted(response.status.reasonPhrase))")
        if logsHeaders, logger.logLevel <= .trace {
            for header in redaction.adding(event.credentialFieldNames).redact(response.headerFields) {
                logger.trace("← \(event.id) \(header)")
            }
        }
    }

    private func logRetry(_ event: CallEvent, after delay: Duration, because error: CourierError) {
        logger.debug("↻ \(line(event)) retry after \(delay): \(error.code)")
    }

    private func logFinished(_ event: CallEvent, result: Result<HTTPResponse, CourierError>, metrics: CallMetrics) {
        switch result {
        case .success(let response):
            logger.debug(
                "✓ \(line(event)) \(response.status.code) in \(metrics.duration), \(metrics.attempts) attempt(s)\(metrics.isFromCache ? ", from cache" : "")"
            )
        case .failure(let error):
            // The error's message is free of secrets by contract; its underlying error may
            // not be, so only the code and message are logged.
            logger.warning("✗ \(line(event)) \(error.code): \(error.message)")
        }
    }

    /// Logs `event` as one line at the level its kind maps to.
    public func handle(_ event: MonitorEvent) {
        switch event {
        case .started: break
        case .sending(let call): logSending(call)
        case .received(let call, let response): logReceived(call, response: response)
        case .retrying(let call, let delay, let error): logRetry(call, after: delay, because: error)
        case .finished(let call, let result, let metrics): logFinished(call, result: result, metrics: metrics)
        case .cache(let cache): logger.debug("cache \(cache)")
        }
    }
}
