import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct RetryPolicyTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func response(_ code: Int, retryAfter: String? = nil) -> RetryPolicy.Outcome {
        var fields = HTTPFields()
        if let retryAfter { fields[.retryAfter] = retryAfter }
        return .response(HTTPResponse(status: .init(code: code), headerFields: fields))
    }

    @Test(arguments: [408, 429, 500, 502, 503, 504])
    func retriesRetryableStatuses(_ code: Int) {
        let policy = RetryPolicy(baseDelay: .seconds(1), jitter: 0)
        #expect(
            policy.decision(afterAttempt: 1, method: .get, outcome: response(code), now: now)
                == .retry(after: .seconds(1)))
    }

    @Test(arguments: [200, 400, 401, 403, 404, 501, 505])
    func doesNotRetryOtherStatuses(_ code: Int) {
        #expect(
            RetryPolicy.default.decision(afterAttempt: 1, method: .get, outcome: response(code), now: now)
                == .doNotRetry)
    }

    @Test func exponentialBackoffCappedWithoutJitter() {
        let policy = RetryPolicy(
            maximumRetries: 10, baseDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(1), jitter: 0)
        #expect(policy.delay(forRetry: 1) == .milliseconds(100))
        #expect(policy.delay(forRetry: 2) == .milliseconds(200))
        #expect(policy.delay(forRetry: 3) == .milliseconds(400))
        #expect(policy.delay(forRetry: 4) == .milliseconds(800))
        #expect(policy.delay(forRetry: 5) == .seconds(1))
        #expect(policy.delay(forRetry: 60) == .seconds(1))
    }

    @Test func jitterUsesTheInjectedRandom() {
        let low = RetryPolicy(baseDelay: .seconds(2), jitter: 0.5, random: { 0 })
        let high = RetryPolicy(baseDelay: .seconds(2), jitter: 0.5, random: { 0.999_999 })
        let full = RetryPolicy(baseDelay: .seconds(2), jitter: 1, random: { 0.25 })
        #expect(low.delay(forRetry: 1) == .seconds(1))
        #expect(high.delay(forRetry: 1) > .milliseconds(1_999))
        #expect(high.delay(forRetry: 1) <= .seconds(2))
        #expect(full.delay(forRetry: 1) == .milliseconds(500))
        let weird = RetryPolicy(baseDelay: .seconds(2), jitter: 0.5, random: { 7 })
        #expect(weird.delay(forRetry: 1) == .seconds(2))
    }

    @Test func countLimitsRetries() {
        let policy = RetryPolicy(maximumRetries: 2, jitter: 0)
        #expect(policy.decision(afterAttempt: 2, method: .get, outcome: response(503), now: now) != .doNotRetry)
        #expect(policy.decision(afterAttempt: 3, method: .get, outcome: response(503), now: now) == .doNotRetry)
        #expect(
            RetryPolicy.none.decision(afterAttempt: 1, method: .get, outcome: response(503), now: now) == .doNotRetry)
    }

    @Test func nonIdempotentOnlyWhenOptedIn() {
        #expect(
            RetryPolicy.default.decision(afterAttempt: 1, method: .post, outcome: response(503), now: now)
                == .doNotRetry)
        #expect(
            RetryPolicy.default.decision(afterAttempt: 1, method: .patch, outcome: response(503), now: now)
                == .doNotRetry)
        #expect(
            RetryPolicy.default.decision(afterAttempt: 1, method: .put, outcome: response(503), now: now) != .doNotRetry
        )
        #expect(
            RetryPolicy.default.decision(afterAttempt: 1, method: .delete, outcome: response(503), now: now)
                != .doNotRetry)
        let optedIn = RetryPolicy.default.allowingNonIdempotent()
        #expect(optedIn.decision(afterAttempt: 1, method: .post, outcome: response(503), now: now) != .doNotRetry)
    }

    @Test func transientTransportErrorsOnly() {
        let policy = RetryPolicy(jitter: 0)
        for code in [CourierError.Code.timedOut, .cannotConnect, .transport] {
            #expect(
                policy.decision(afterAttempt: 1, method: .get, outcome: .error(CourierError(code, "x")), now: now)
                    != .doNotRetry)
        }
        for code in [CourierError.Code.decoding, .tls, .invalidRequest, .cancelled] {
            #expect(
                policy.decision(afterAttempt: 1, method: .get, outcome: .error(CourierError(code, "x")), now: now)
                    == .doNotRetry)
        }
        #expect(
            policy.decision(afterAttempt: 1, method: .get, outcome: .error(CancellationError()), now: now)
                == .doNotRetry)
        let noTransport = RetryPolicy(retriesTransportErrors: false)
        #expect(
            noTransport.decision(afterAttempt: 1, method: .get, outcome: .error(CourierError(.timedOut, "x")), now: now)
                == .doNotRetry)
    }

    @Test func retryAfterSecondsAndDates() {
        let policy = RetryPolicy(jitter: 0)
        #expect(
            policy.decision(afterAttempt: 1, method: .get, outcome: response(503, retryAfter: "7"), now: now)
                == .retry(after: .seconds(7)))
        let date = HTTPDateFormat.format(now.addingTimeInterval(42))
        #expect(
            policy.decision(afterAttempt: 1, method: .get, outcome: response(429, retryAfter: date), now: now)
                == .retry(after: .seconds(42)))
        let past = HTTPDateFormat.format(now.addingTimeInterval(-100))
        #expect(
            policy.decision(afterAttempt: 1, method: .get, outcome: response(503, retryAfter: past), now: now)
                == .retry(after: .zero))
        // Too long a wait: give up rather than hang.
        #expect(
            policy.decision(afterAttempt: 1, method: .get, outcome: response(503, retryAfter: "100000"), now: now)
                == .doNotRetry)
        #expect(
            policy.decision(
                afterAttempt: 1, method: .get, outcome: response(503, retryAfter: "99999999999999999999999"), now: now)
                == .doNotRetry)
        // Garbage falls back to back-off.
        #expect(
            policy.decision(afterAttempt: 1, method: .get, outcome: response(503, retryAfter: "soon"), now: now)
                == .retry(after: policy.delay(forRetry: 1)))
        let ignoring = RetryPolicy(jitter: 0, honoursRetryAfter: false)
        #expect(
            ignoring.decision(afterAttempt: 1, method: .get, outcome: response(503, retryAfter: "7"), now: now)
                == .retry(after: .milliseconds(300)))
    }

    @Test func parsesAllThreeHTTPDateFormats() {
        let reference = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        let base = reference.addingTimeInterval(-10)
        #expect(RetryPolicy.parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: base) == .seconds(10))
        #expect(RetryPolicy.parseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", now: base) == .seconds(10))
        #expect(RetryPolicy.parseRetryAfter("Sun Nov  6 08:49:37 1994", now: base) == .seconds(10))
        #expect(RetryPolicy.parseRetryAfter("", now: base) == nil)
        #expect(RetryPolicy.parseRetryAfter("-5", now: base) == nil)
    }
}
