import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// `RetryDecision` as a table: no server, no clock, no sleeping.
@Suite struct RetryDecisionTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    /// One second of back-off without jitter, so every delay is exact.
    static let policy = RetryPolicy(maximumRetries: 3, baseDelay: .seconds(1), multiplier: 2, jitter: 0)

    /// What a row expects.
    enum Expected: Equatable, CustomStringConvertible {
        case retry(Duration)
        case giveUp(CourierError.Code)

        var description: String {
            switch self {
            case .retry(let delay): "retry after \(delay)"
            case .giveUp(let code): "give up (\(code))"
            }
        }
    }

    /// One row: an attempt's failure, what retriers said, and the answer.
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var attempt = 1
        var cap = 10
        var method: HTTPRequest.Method = .get
        var failure: AttemptFailure
        var verdict: RetryVerdict = .doNotRetry
        var policy = RetryDecisionTests.policy
        var expected: Expected

        var testDescription: String { name }
    }

    static func status(_ code: Int, retryAfter: String? = nil) -> AttemptFailure {
        var fields = HTTPFields()
        if let retryAfter { fields[.retryAfter] = retryAfter }
        let response = HTTPResponse(status: .init(code: code), headerFields: fields)
        return AttemptFailure(
            response: response, body: Data(),
            error: CourierError(.httpStatus, "status \(code)", response: response))
    }

    /// A 200 answer a response check refused.
    static func refusal(retryable: Bool) -> AttemptFailure {
        let response = HTTPResponse(status: .ok)
        var failure = AttemptFailure(
            response: response, body: Data(), error: CourierError(.apiError, "refused", response: response))
        failure.isRetryableRefusal = retryable
        return failure
    }

    static func error(_ code: CourierError.Code) -> AttemptFailure {
        AttemptFailure(error: CourierError(code, "attempt failed"))
    }

    static let rows: [Row] = [
        // Statuses: the policy's list, with back-off by attempt.
        Row(name: "503 after the first attempt", failure: status(503), expected: .retry(.seconds(1))),
        Row(name: "500 after the second attempt", attempt: 2, failure: status(500), expected: .retry(.seconds(2))),
        Row(name: "429 without Retry-After", failure: status(429), expected: .retry(.seconds(1))),
        Row(name: "408", failure: status(408), expected: .retry(.seconds(1))),
        Row(name: "404 is final", failure: status(404), expected: .giveUp(.httpStatus)),
        Row(name: "400 is final", failure: status(400), expected: .giveUp(.httpStatus)),
        Row(name: "501 is final", failure: status(501), expected: .giveUp(.httpStatus)),
        Row(name: "401 without a retrier is final", failure: status(401), expected: .giveUp(.httpStatus)),
        // Transient and other errors.
        Row(name: "timeout", failure: error(.timedOut), expected: .retry(.seconds(1))),
        Row(name: "connection refused", failure: error(.cannotConnect), expected: .retry(.seconds(1))),
        Row(name: "connection reset", failure: error(.transport), expected: .retry(.seconds(1))),
        Row(name: "TLS failure is final", failure: error(.tls), expected: .giveUp(.tls)),
        Row(name: "refused redirect is final", failure: error(.redirect), expected: .giveUp(.redirect)),
        Row(
            name: "transport errors not retried by the policy",
            failure: error(.timedOut), policy: RetryPolicy(retriesTransportErrors: false),
            expected: .giveUp(.timedOut)),
        // Cancellation ends the call whatever retriers say.
        Row(name: "cancelled", failure: error(.cancelled), expected: .giveUp(.cancelled)),
        Row(
            name: "cancelled, a retrier says retry", failure: error(.cancelled), verdict: .retry,
            expected: .giveUp(.cancelled)),
        // An answer the call accepted but could not use.
        Row(
            name: "decoding error with a response",
            failure: AttemptFailure(
                error: CourierError(.decoding, "bad body", response: HTTPResponse(status: .ok))),
            verdict: .retry, expected: .giveUp(.decoding)),
        // An answer a response check refused: retryable ones as a retryable status.
        Row(name: "retryable refusal", failure: refusal(retryable: true), expected: .retry(.seconds(1))),
        Row(
            name: "retryable refusal, third attempt", attempt: 3, failure: refusal(retryable: true),
            expected: .retry(.seconds(4))),
        Row(
            name: "retryable refusal, policy's retries used up", attempt: 4, failure: refusal(retryable: true),
            expected: .giveUp(.apiError)),
        Row(
            name: "retryable refusal at the cap", attempt: 2, cap: 2, failure: refusal(retryable: true),
            expected: .giveUp(.apiError)),
        Row(
            name: "retryable refusal of a POST", method: .post, failure: refusal(retryable: true),
            expected: .giveUp(.apiError)),
        Row(name: "final refusal", failure: refusal(retryable: false), expected: .giveUp(.apiError)),
        Row(
            name: "final refusal, a retrier says retry", failure: refusal(retryable: false), verdict: .retry,
            expected: .retry(.zero)),
        // Non-idempotent methods: only with the policy's opt-in, or when a retrier asks.
        Row(name: "POST 503", method: .post, failure: status(503), expected: .giveUp(.httpStatus)),
        Row(name: "PATCH timeout", method: .patch, failure: error(.timedOut), expected: .giveUp(.timedOut)),
        Row(
            name: "POST 503, policy opts in", method: .post, failure: status(503),
            policy: policy.allowingNonIdempotent(), expected: .retry(.seconds(1))),
        Row(
            name: "POST 401, a retrier refreshed", method: .post, failure: status(401), verdict: .retry,
            expected: .retry(.zero)),
        Row(name: "PUT 503 (idempotent)", method: .put, failure: status(503), expected: .retry(.seconds(1))),
        Row(
            name: "DELETE timeout (idempotent)", method: .delete, failure: error(.timedOut),
            expected: .retry(.seconds(1))),
        // Retry-After: seconds, an HTTP date, too long, unreadable, or ignored by the policy.
        Row(name: "Retry-After seconds", failure: status(503, retryAfter: "7"), expected: .retry(.seconds(7))),
        Row(
            name: "Retry-After HTTP date", failure: status(429, retryAfter: "Fri, 15 Jan 2027 08:00:30 GMT"),
            expected: .retry(.seconds(30))),
        Row(
            name: "Retry-After date in the past", failure: status(503, retryAfter: "Fri, 15 Jan 2027 07:00:00 GMT"),
            expected: .retry(.zero)),
        Row(name: "Retry-After too long", failure: status(503, retryAfter: "121"), expected: .giveUp(.httpStatus)),
        Row(name: "Retry-After unreadable", failure: status(503, retryAfter: "soon"), expected: .retry(.seconds(1))),
        Row(
            name: "Retry-After not honoured", failure: status(503, retryAfter: "7"),
            policy: RetryPolicy(baseDelay: .seconds(1), jitter: 0, honoursRetryAfter: false),
            expected: .retry(.seconds(1))),
        Row(
            name: "Retry-After on a status the policy does not retry", failure: status(404, retryAfter: "1"),
            expected: .giveUp(.httpStatus)),
        // The policy's own limit, inside the cap.
        Row(name: "policy's last retry", attempt: 3, failure: status(503), expected: .retry(.seconds(4))),
        Row(name: "policy's retries used up", attempt: 4, failure: status(503), expected: .giveUp(.httpStatus)),
        Row(name: "policy .none", failure: status(503), policy: .none, expected: .giveUp(.httpStatus)),
        // The one cap, whatever retriers and the policy say.
        Row(
            name: "cap reached, policy would retry", attempt: 2, cap: 2, failure: status(503),
            expected: .giveUp(.httpStatus)),
        Row(
            name: "cap reached, a retrier says retry", attempt: 4, cap: 4, failure: status(503), verdict: .retry,
            expected: .giveUp(.httpStatus)),
        Row(
            name: "cap reached, a retrier says retry after", attempt: 4, cap: 4, failure: error(.timedOut),
            verdict: .retryAfter(.seconds(1)), expected: .giveUp(.timedOut)),
        Row(name: "cap of one", cap: 1, failure: status(503), verdict: .retry, expected: .giveUp(.httpStatus)),
        Row(
            name: "one below the cap", attempt: 3, cap: 4, failure: status(503), verdict: .retry,
            expected: .retry(.zero)),
        // Verdicts.
        Row(name: ".retry on a final status", failure: status(404), verdict: .retry, expected: .retry(.zero)),
        Row(
            name: ".retryAfter", failure: status(404), verdict: .retryAfter(.milliseconds(250)),
            expected: .retry(.milliseconds(250))),
        Row(
            name: ".retryAfter a negative delay", failure: status(404), verdict: .retryAfter(.seconds(-3)),
            expected: .retry(.zero)),
        Row(
            name: ".retryAfter past the policy's limit", attempt: 5, failure: status(503),
            verdict: .retryAfter(.seconds(2)),
            expected: .retry(.seconds(2))),
        Row(
            name: ".doNotRetry leaves it to the policy", failure: status(502), verdict: .doNotRetry,
            expected: .retry(.seconds(1))),
        Row(
            name: ".fail ends with its error", failure: status(401),
            verdict: .fail(CourierError(.authentication, "refresh failed")), expected: .giveUp(.authentication)),
        Row(
            name: ".fail wins over a retryable status", failure: status(503),
            verdict: .fail(CourierError(.authentication, "refresh failed")), expected: .giveUp(.authentication)),
        Row(
            name: ".fail at the cap", attempt: 3, cap: 3, failure: status(401),
            verdict: .fail(CourierError(.authentication, "refresh failed")), expected: .giveUp(.authentication)),
    ]

    @Test(arguments: rows)
    func decides(_ row: Row) {
        let decision = RetryDecision(
            afterAttempt: row.attempt, of: row.cap, method: row.method, failure: row.failure, verdict: row.verdict,
            policy: row.policy, now: Self.now)
        let got: Expected =
            switch decision {
            case .retry(let delay): .retry(delay)
            case .giveUp(let error): .giveUp(error.code)
            }
        #expect(got == row.expected, "\(row.name)")
    }

    /// The error a call ends with is the attempt's own (its response included) unless a
    /// retrier's `.fail` replaced it.
    @Test func givingUpKeepsTheAttemptsErrorAndResponse() {
        let failure = Self.status(503)
        let decision = RetryDecision(
            afterAttempt: 2, of: 2, method: .get, failure: failure, verdict: .retry, policy: Self.policy,
            now: Self.now)
        guard case .giveUp(let error) = decision else {
            Issue.record("expected to give up, got \(decision)")
            return
        }
        #expect(error.status?.code == 503)
    }

    @Test(arguments: [
        (HTTPRequest.Method.get, true), (.head, true), (.options, true), (.trace, true), (.put, true),
        (.delete, true), (.post, false), (.patch, false), (.connect, false), (HTTPRequest.Method("PURGE")!, false),
    ])
    func oneIdempotentSet(_ method: HTTPRequest.Method, _ idempotent: Bool) {
        #expect(method.isIdempotent == idempotent)
        #expect(RetryPolicy.isIdempotent(method) == idempotent)
    }

    @Test func retriersAreNotAskedForCancellationOrAnUnusableAnswer() {
        #expect(!RetryDecision.asksRetriers(after: Self.error(.cancelled)))
        #expect(
            !RetryDecision.asksRetriers(
                after: AttemptFailure(error: CourierError(.decoding, "bad", response: HTTPResponse(status: .ok)))))
        #expect(RetryDecision.asksRetriers(after: Self.status(401)))
        #expect(RetryDecision.asksRetriers(after: Self.error(.timedOut)))
    }
}
