import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// `RetryDecision` on what a lying server sends (`Retry-After` huge, negative, fractional, a date
/// far ahead or behind, twice) and on extreme policies (no or endless retries, zero or endless
/// delays, a multiplier that overflows): no trap, no negative delay, the caps hold.
@Suite struct RetryDecisionHostileTests {
    typealias Row = RetryDecisionTests.Row

    /// A status with one `Retry-After` field per value.
    static func status(_ code: Int, retryAfter values: [String]) -> AttemptFailure {
        var fields = HTTPFields()
        for value in values { fields.append(HTTPField(name: .retryAfter, value: value)) }
        let response = HTTPResponse(status: .init(code: code), headerFields: fields)
        return AttemptFailure(
            response: response, body: Data(), error: CourierError(.httpStatus, "status \(code)", response: response))
    }

    static func retryAfterRows(_ code: Int) -> [Row] {
        let status = { (value: String) in RetryDecisionTests.status(code, retryAfter: value) }
        return [
            // Past the policy's maximum (120 s): give up at once rather than wait.
            Row(
                name: "\(code) Retry-After 99999999999", failure: status("99999999999"), expected: .giveUp(.httpStatus)),
            Row(
                name: "\(code) Retry-After past Int64", failure: status("9223372036854775808"),
                expected: .giveUp(.httpStatus)),
            Row(
                name: "\(code) Retry-After a date in year 9999", failure: status("Fri, 31 Dec 9999 23:59:59 GMT"),
                expected: .giveUp(.httpStatus)),
            Row(name: "\(code) Retry-After at the maximum", failure: status("120"), expected: .retry(.seconds(120))),
            Row(name: "\(code) Retry-After zero", failure: status("0"), expected: .retry(.zero)),
            Row(name: "\(code) Retry-After padded", failure: status(" 7 "), expected: .retry(.seconds(7))),
            // Not delta-seconds nor a date: the back-off, as without the field.
            Row(name: "\(code) Retry-After negative", failure: status("-5"), expected: .retry(.seconds(1))),
            Row(name: "\(code) Retry-After fractional", failure: status("1.5"), expected: .retry(.seconds(1))),
            Row(name: "\(code) Retry-After signed", failure: status("+5"), expected: .retry(.seconds(1))),
            Row(
                name: "\(code) Retry-After a date in 1970", failure: status("Thu, 01 Jan 1970 00:00:00 GMT"),
                expected: .retry(.zero)),
            // Two fields read as one list, which is neither form: the back-off.
            Row(
                name: "\(code) two Retry-After fields", failure: Self.status(code, retryAfter: ["5", "99999999999"]),
                expected: .retry(.seconds(1))),
        ]
    }

    static let extremePolicyRows: [Row] = [
        Row(
            name: "endless retries stop at the cap", attempt: 10, cap: 10, failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(maximumRetries: .max, jitter: 0), expected: .giveUp(.httpStatus)),
        Row(
            name: "no retries", failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(maximumRetries: 0, jitter: 0), expected: .giveUp(.httpStatus)),
        Row(
            name: "negative retries", failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(maximumRetries: -3, jitter: 0), expected: .giveUp(.httpStatus)),
        Row(
            name: "a cap of Int.max", attempt: 500, cap: .max, failure: RetryDecisionTests.error(.timedOut),
            policy: RetryPolicy(maximumRetries: .max, jitter: 0), expected: .retry(.seconds(30))),
        Row(
            name: "zero base delay", attempt: 3, failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(maximumRetries: .max, baseDelay: .zero, jitter: 0), expected: .retry(.zero)),
        Row(
            name: "zero base delay, an overflowing multiplier", attempt: 2_000, cap: .max,
            failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(maximumRetries: .max, baseDelay: .zero, multiplier: 1e300, jitter: 0),
            expected: .retry(.zero)),
        Row(
            name: "endless base delay", failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(baseDelay: .seconds(Int64.max), jitter: 0), expected: .retry(.seconds(30))),
        Row(
            name: "negative base delay", failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(baseDelay: .seconds(-5), jitter: 0), expected: .retry(.zero)),
        Row(
            name: "a multiplier that overflows", attempt: 5, failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(maximumRetries: .max, multiplier: .greatestFiniteMagnitude, jitter: 0),
            expected: .retry(.seconds(30))),
        Row(
            name: "an infinite multiplier", attempt: 3, failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(maximumRetries: .max, baseDelay: .seconds(1), multiplier: .infinity, jitter: 0),
            expected: .retry(.seconds(1))),
        Row(
            name: "endless maximum delay, capped by the longest wait", attempt: 200, cap: .max,
            failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(maximumRetries: .max, maximumDelay: .seconds(Int64.max), jitter: 0),
            expected: .retry(ConfigurationBounds.maximumWait)),
        Row(
            name: "full jitter keeps the maximum", attempt: 40, cap: .max, failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(maximumRetries: .max, jitter: 1, random: { 1.5 }),
            expected: .retry(.seconds(30))),
        Row(
            name: "jitter out of bounds", failure: RetryDecisionTests.status(503),
            policy: RetryPolicy(baseDelay: .seconds(1), jitter: 7, random: { 0.5 }), expected: .retry(.seconds(0.5))),
        Row(
            name: "a Retry-After maximum of Int64.max seconds",
            failure: RetryDecisionTests.status(503, retryAfter: "9223372036854775807"),
            policy: RetryPolicy(jitter: 0, maximumRetryAfter: .seconds(Int64.max)),
            expected: .retry(.seconds(Int64.max))),
        Row(
            name: "a negative Retry-After maximum", failure: RetryDecisionTests.status(503, retryAfter: "0"),
            policy: RetryPolicy(jitter: 0, maximumRetryAfter: .seconds(-1)), expected: .giveUp(.httpStatus)),
    ]

    @Test(arguments: retryAfterRows(503) + retryAfterRows(429) + extremePolicyRows)
    func decides(_ row: Row) {
        let decision = RetryDecision(
            afterAttempt: row.attempt, of: row.cap, method: row.method, failure: row.failure, verdict: row.verdict,
            policy: row.policy, now: RetryDecisionTests.now)
        switch decision {
        case .retry(let delay):
            #expect(delay >= .zero, "\(row.name)")
            #expect(RetryDecisionTests.Expected.retry(delay) == row.expected, "\(row.name)")
        case .giveUp(let error):
            #expect(RetryDecisionTests.Expected.giveUp(error.code) == row.expected, "\(row.name)")
        }
    }

    /// Every delay the policy computes, over every retry an extreme policy allows, is within
    /// `0...maximumDelay`.
    @Test func everyComputedDelayStaysWithinTheMaximum() {
        let policies = [
            RetryPolicy(maximumRetries: .max, baseDelay: .zero, multiplier: 1e308, jitter: 1),
            RetryPolicy(maximumRetries: .max, baseDelay: .seconds(Int64.max), multiplier: 2, jitter: 0.5),
            RetryPolicy(
                maximumRetries: .max, baseDelay: .nanoseconds(1), multiplier: 1.000_1, maximumDelay: .milliseconds(7)),
            RetryPolicy(maximumRetries: .max, maximumDelay: .seconds(Int64.max), jitter: 0),
            RetryPolicy(maximumRetries: .max, multiplier: .nan, maximumDelay: .seconds(-1), jitter: .nan),
        ]
        for policy in policies {
            for retry in [1, 2, 3, 31, 63, 64, 65, 1_023, 1_024, 1_100, 100_000, .max] {
                let delay = policy.delay(forRetry: retry)
                #expect(delay >= .zero)
                #expect(delay <= min(policy.maximumDelay, ConfigurationBounds.maximumWait) + .nanoseconds(1))
            }
        }
    }
}
