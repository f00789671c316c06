import HTTPTypes
import Logging

/// Logs every call through swift-log, with credentials redacted.
///
/// Start, send, retry and finish at `.debug` (failures at `.warning`); header lines at
/// `.trace`. Authorization, cookies, every credential field of the service's client and
/// authentication interceptor, and secret query parameters never reach the log.
public struct LoggingEventMonitor: EventMonitor {
    public var logger: Logger
    /// What is redacted; the credential fields of the call's service are added to it.
    var redaction: Redaction
    /// Whether header fields are logged (at `.trace`).
    public var logsHeaders: Bool

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
        "\(event.id) \(event.request.method.rawValue) \(redaction.redactedURL(of: event.request))"
    }

    public func willSend(_ event: CallEvent) {
        logger.debug("→ \(line(event)) attempt \(event.attempt)")
        if logsHeaders, logger.logLevel <= .trace {
            for header in redaction.adding(event.credentialFieldNames).redact(event.request.headerFields) {
                logger.trace("→ \(event.id) \(header)")
            }
        }
    }

    public func didReceive(_ event: CallEvent, response: HTTPResponse) {
        logger.debug("← \(line(event)) \(response.status.code) \(response.status.reasonPhrase)")
        if logsHeaders, logger.logLevel <= .trace {
            for header in redaction.adding(event.credentialFieldNames).redact(response.headerFields) {
                logger.trace("← \(event.id) \(header)")
            }
        }
    }

    public func willRetry(_ event: CallEvent, after delay: Duration, because error: CourierError) {
        logger.debug("↻ \(line(event)) retry after \(delay): \(error.code)")
    }

    public func didFinish(_ event: CallEvent, result: Result<HTTPResponse, CourierError>, metrics: CallMetrics) {
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

    public func didObserveCache(_ event: CacheEvent) {
        logger.debug("cache \(event)")
    }
}
