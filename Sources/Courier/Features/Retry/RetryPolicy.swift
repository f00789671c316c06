import Foundation
import HTTPTypes

/// When and how soon a failed call is sent again.
///
/// Exponential back-off with jitter: attempt *n* (1-based) waits
/// `min(maximumDelay, baseDelay × multiplierⁿ⁻¹)`, of which the `jitter` fraction is random.
/// A `Retry-After` header (seconds or an HTTP date) overrides the computed delay, capped by
/// `maximumRetryAfter`. Only idempotent methods are retried unless `retriesNonIdempotent`.
public struct RetryPolicy: Sendable {
    /// How many times a call may be re-sent after its first attempt; within the service's
    /// one cap, `ServiceConfiguration.maximumAttempts` (see `RetryDecision`).
    var maximumRetries: Int
    /// The delay before the first retry.
    var baseDelay: Duration
    /// The factor between consecutive delays.
    var multiplier: Double
    /// The longest computed delay.
    var maximumDelay: Duration
    /// The random share of each delay, 0 (none) … 1 ("full jitter").
    var jitter: Double
    /// Status codes worth another attempt.
    var retryableStatuses: Set<Int>
    /// Whether transient transport failures (timeouts, refused or reset connections) are retried.
    var retriesTransportErrors: Bool
    /// Whether POST, PATCH and other non-idempotent methods may be retried.
    var retriesNonIdempotent: Bool
    /// Whether a `Retry-After` header decides the delay.
    var honoursRetryAfter: Bool
    /// A `Retry-After` longer than this stops retrying instead of waiting.
    var maximumRetryAfter: Duration
    /// Returns a number in `0..<1`; injectable so tests are deterministic.
    var random: @Sendable () -> Double

    /// A policy; the defaults retry twice, after about 0.3 s and 0.6 s.
    /// - Parameters:
    ///   - maximumRetries: How many times a call may be re-sent after its first attempt, within
    ///     the service's one cap on attempts.
    ///   - baseDelay: The delay before the first retry.
    ///   - multiplier: The factor between consecutive delays.
    ///   - maximumDelay: The longest computed delay.
    ///   - jitter: The random share of each delay, 0 (none) … 1 ("full jitter").
    ///   - retryableStatuses: Status codes worth another attempt.
    ///   - retriesTransportErrors: Whether transient transport failures (timeouts, refused or
    ///     reset connections) are retried.
    ///   - retriesNonIdempotent: Whether POST, PATCH and other non-idempotent methods may be retried.
    ///   - honoursRetryAfter: Whether a `Retry-After` header decides the delay.
    ///   - maximumRetryAfter: A `Retry-After` longer than this stops retrying instead of waiting.
    public init(
        maximumRetries: Int = 2, baseDelay: Duration = .milliseconds(300), multiplier: Double = 2,
        maximumDelay: Duration = .seconds(30), jitter: Double = 0.5,
        retryableStatuses: Set<Int> = RetryPolicy.defaultRetryableStatuses, retriesTransportErrors: Bool = true,
        retriesNonIdempotent: Bool = false, honoursRetryAfter: Bool = true,
        maximumRetryAfter: Duration = .seconds(120)
    ) {
        self.init(
            maximumRetries: maximumRetries, baseDelay: baseDelay, multiplier: multiplier, maximumDelay: maximumDelay,
            jitter: jitter, retryableStatuses: retryableStatuses, retriesTransportErrors: retriesTransportErrors,
            retriesNonIdempotent: retriesNonIdempotent, honoursRetryAfter: honoursRetryAfter,
            maximumRetryAfter: maximumRetryAfter, random: { Double.random(in: 0..<1) })
    }

    /// The same with an injected random source (tests).
    init(
        maximumRetries: Int = 2, baseDelay: Duration = .milliseconds(300), multiplier: Double = 2,
        maximumDelay: Duration = .seconds(30), jitter: Double = 0.5,
        retryableStatuses: Set<Int> = RetryPolicy.defaultRetryableStatuses, retriesTransportErrors: Bool = true,
        retriesNonIdempotent: Bool = false, honoursRetryAfter: Bool = true,
        maximumRetryAfter: Duration = .seconds(120),
        random: @escaping @Sendable () -> Double
    ) {
        self.maximumRetries = max(0, maximumRetries)
        self.baseDelay = max(.zero, baseDelay)
        self.multiplier = multiplier.isFinite ? max(1, multiplier) : 1
        self.maximumDelay = max(.zero, maximumDelay)
        self.jitter = jitter.isFinite ? min(1, max(0, jitter)) : 0
        self.retryableStatuses = retryableStatuses
        self.retriesTransportErrors = retriesTransportErrors
        self.retriesNonIdempotent = retriesNonIdempotent
        self.honoursRetryAfter = honoursRetryAfter
        self.maximumRetryAfter = maximumRetryAfter
        self.random = random
    }

    /// 408, 429, 500, 502, 503, 504.
    public static let defaultRetryableStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]

    /// Two retries with back-off from 300 ms, idempotent methods only.
    public static let `default` = RetryPolicy()
    /// Never retry.
    public static let none = RetryPolicy(maximumRetries: 0)

    /// The same policy, allowing non-idempotent methods (POST) to be retried.
    public func allowingNonIdempotent() -> RetryPolicy {
        var copy = self
        copy.retriesNonIdempotent = true
        return copy
    }

    /// What ended an attempt.
    enum Outcome: Sendable {
        /// The server answered.
        case response(HTTPResponse)
        /// The attempt failed without an answer.
        case error(any Error & Sendable)
    }

    /// The policy's verdict on a failed attempt.
    enum Decision: Sendable, Equatable {
        /// Send again after the delay.
        case retry(after: Duration)
        /// Give up and report the failure.
        case doNotRetry
    }

    /// Decides whether to retry after attempt number `attempt` (1 = the first send).
    /// - Parameters:
    ///   - attempt: the number of attempts made so far.
    ///   - method: the request's method.
    ///   - outcome: the response or error of the last attempt.
    ///   - now: the wall-clock time, for `Retry-After` dates.
    /// - Returns: retry after a delay, or not.
    func decision(
        afterAttempt attempt: Int, method: HTTPRequest.Method, outcome: Outcome, now: Date
    ) -> Decision {
        guard attempt >= 1, attempt <= maximumRetries else { return .doNotRetry }
        guard retriesNonIdempotent || method.isIdempotent else { return .doNotRetry }
        switch outcome {
        case .response(let response):
            guard retryableStatuses.contains(response.status.code) else { return .doNotRetry }
            if honoursRetryAfter, let value = response.headerFields[.retryAfter] {
                if let wait = Self.parseRetryAfter(value, now: now) {
                    return wait <= maximumRetryAfter ? .retry(after: wait) : .doNotRetry
                }
            }
            return .retry(after: delay(forRetry: attempt))
        case .error(let error):
            if error is CancellationError { return .doNotRetry }
            guard retriesTransportErrors, let courier = error as? CourierError, courier.isTransient else {
                return .doNotRetry
            }
            return .retry(after: delay(forRetry: attempt))
        }
    }

    /// The back-off before retry number `retry` (1-based), jitter included.
    /// - Parameter retry: which retry.
    /// - Returns: the delay.
    func delay(forRetry retry: Int) -> Duration {
        let exponent = Double(max(0, retry - 1))
        let raw = baseDelay.seconds * pow(multiplier, exponent)
        let capped = min(raw, maximumDelay.seconds)
        let sample = min(max(random(), 0), 1)
        // The fixed share plus a random part of the jitter share.
        let seconds = capped * (1 - jitter) + capped * jitter * sample
        return .clampedSeconds(seconds)
    }

    /// Whether `method` is idempotent (RFC 9110 §9.2.2).
    static func isIdempotent(_ method: HTTPRequest.Method) -> Bool {
        method.isIdempotent
    }

    /// Parses a `Retry-After` value: delta-seconds or an HTTP date (IMF-fixdate, RFC 850
    /// or asctime). A date in the past means "now".
    /// - Parameters:
    ///   - value: the header value.
    ///   - now: the current wall-clock time.
    /// - Returns: the delay, or nil when the value is not valid.
    static func parseRetryAfter(_ value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            guard let seconds = Int64(trimmed) else { return .seconds(Int64.max / 1_000_000_000_000) }
            return .seconds(seconds)
        }
        guard let date = HTTPDateFormat.parse(trimmed) else { return nil }
        return .clampedSeconds(date.timeIntervalSince(now))
    }
}
