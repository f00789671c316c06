import Foundation
import HTTPTypes

/// What a call does after an attempt that failed: send again after a delay, or end with an
/// error. The one place that decides; a pure value, computed without I/O.
///
/// The inputs are what the call loop knows once an attempt failed: the attempt number, how it
/// ended, the retriers' verdict (the call's, the authentication interceptor's — which has
/// already refreshed the credential when it says `.retry` —, the service's), the call's
/// `RetryPolicy`, the method, the wall-clock time (for a `Retry-After` date) and the call's one
/// attempt cap. In order:
///
/// 1. a cancelled call ends, and so does a failure that carries a response the call accepted
///    but could not use (validation, decoding): sending again would get the same answer;
///    retriers are not asked (`asksRetriers`);
/// 2. a retrier's `.fail(error)` ends the call with that error;
/// 3. the cap: after `maximumAttempts` sends the call ends with the attempt's error, whatever
///    retriers and the policy say;
/// 4. a retrier's `.retry` / `.retryAfter(d)` sends again (now / after `d`) — for any method:
///    a retrier that asks knows why (a 401 was not acted on);
/// 5. otherwise the policy decides: its statuses, transient errors, `Retry-After`, idempotent
///    methods only unless it opts in, and at most `maximumRetries` retries; an answer a
///    response check refused as retryable, and an `EnvelopeRule`'s retry code, count as a
///    retryable status.
///
/// How the limits relate: `ServiceConfiguration.maximumAttempts` is the one cap — no path sends
/// a call more often. `RetryPolicy.maximumRetries` and `AuthenticationInterceptor.maximumAttempts`
/// are opinions inside it: the policy offers at most `maximumRetries` retries (so
/// `maximumRetries + 1` attempts) and the interceptor stops asking for a refresh-then-retry
/// from its own `maximumAttempts` on; the smaller of a limit and the cap wins. The transport's
/// resend of an idempotent request whose pooled connection turned out closed before any byte of
/// an answer (`CurlTransfer.shouldRetryOnFreshConnection`) is part of the same attempt: the
/// request never reached the server's application, so it is not counted as a send.
enum RetryDecision {
    /// Send the call again after this delay.
    case retry(after: Duration)
    /// End the call with this error.
    case giveUp(CourierError)

    /// Decides after attempt number `attempt` (1 = the first send).
    /// - Parameters:
    ///   - attempt: the attempts made so far, the failed one included.
    ///   - maximumAttempts: the call's one attempt cap (at least 1).
    ///   - method: the request's method.
    ///   - failure: how the attempt ended.
    ///   - verdict: the retriers' verdict (`.doNotRetry` when none had an opinion or none was
    ///     asked).
    ///   - policy: the call's retry policy.
    ///   - now: the wall-clock time, for `Retry-After` dates.
    init(
        afterAttempt attempt: Int, of maximumAttempts: Int, method: HTTPRequest.Method, failure: AttemptFailure,
        verdict: RetryVerdict, policy: RetryPolicy, now: Date
    ) {
        guard Self.asksRetriers(after: failure) else {
            self = .giveUp(failure.error)
            return
        }
        if case .fail(let error) = verdict {
            self = .giveUp(error)
            return
        }
        guard attempt < maximumAttempts else {
            self = .giveUp(failure.error)
            return
        }
        switch verdict {
        case .retry:
            self = .retry(after: .zero)
        case .retryAfter(let delay):
            self = .retry(after: max(.zero, delay))
        case .doNotRetry, .fail:
            guard !failure.isRetryableRefusal, failure.envelopeMeaning != .retry else {
                self = Self(policy.decision(afterRetryableAnswer: attempt, method: method), failure: failure)
                return
            }
            let outcome: RetryPolicy.Outcome = failure.response.map { .response($0) } ?? .error(failure.error)
            switch policy.decision(afterAttempt: attempt, method: method, outcome: outcome, now: now) {
            case .retry(let delay): self = .retry(after: delay)
            case .doNotRetry: self = .giveUp(failure.error)
            }
        }
    }

    /// Whether the failure may be retried at all, so that retriers are worth asking: not for a
    /// cancelled call, nor for an answer the call accepted but could not use.
    /// - Parameter failure: how the attempt ended.
    /// - Returns: false when the call ends whatever retriers say.
    static func asksRetriers(after failure: AttemptFailure) -> Bool {
        if failure.error.code == .cancelled { return false }
        return failure.response != nil || failure.error.response == nil
    }
}

extension HTTPRequest.Method {
    /// Whether a request with this method may be sent twice without repeating an effect
    /// (RFC 9110 §9.2.2). The one list: the retry policy and the transport's resend on a fresh
    /// connection both use it.
    var isIdempotent: Bool {
        switch self {
        case .get, .head, .options, .trace, .put, .delete: true
        default: false
        }
    }
}

extension RetryDecision {
    /// The policy's decision as the call's.
    fileprivate init(_ decision: RetryPolicy.Decision, failure: AttemptFailure) {
        switch decision {
        case .retry(let delay): self = .retry(after: delay)
        case .doNotRetry: self = .giveUp(failure.error)
        }
    }
}

extension RetryPolicy {
    /// The policy on an answer a response check refused as retryable, or an envelope whose code
    /// asks for a retry: as on a retryable status without `Retry-After` (retry count,
    /// idempotent methods, back-off).
    /// - Parameters:
    ///   - attempt: the attempts made so far.
    ///   - method: the request's method.
    /// - Returns: retry after the back-off, or not.
    func decision(afterRetryableAnswer attempt: Int, method: HTTPRequest.Method) -> Decision {
        guard attempt >= 1, attempt <= maximumRetries else { return .doNotRetry }
        guard retriesNonIdempotent || method.isIdempotent else { return .doNotRetry }
        return .retry(after: delay(forRetry: attempt))
    }
}
