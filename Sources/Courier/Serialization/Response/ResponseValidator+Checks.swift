import Foundation

/// What a response check says of an answer whose status and content type passed.
public enum ResponseVerdict: Sendable {
    /// The answer is good: decode it.
    case accept
    /// The answer is not usable: the attempt fails with `CourierError.apiError` carrying
    /// `error` (read it with `error.domain(as:)`). A `retryable` refusal goes to the retry
    /// decision like a retryable status (the retriers, then the retry policy's back-off,
    /// idempotent methods only unless the policy opts in, within the one attempt cap); any
    /// other refusal ends the call.
    case refuse(any Error & Sendable, retryable: Bool = false)
}

extension ResponseValidator {
    /// A copy that also runs `check` on every answer it accepts (after the status codes and
    /// content types), before the answer is preprocessed and decoded.
    ///
    /// ```swift
    /// configuration.pipeline.validator = .default.checking { context in
    ///     context.body.isEmpty ? .refuse(FeedError.emptyPage, retryable: true) : .accept
    /// }
    /// ```
    /// Checks run in the order they were added; the first refusal wins. A call's own
    /// `CallOptions.validator` replaces the service's, checks included.
    /// - Parameter check: judges the answer; an error it throws refuses it (not retryable).
    /// - Returns: the validator with the check added.
    public func checking(_ check: @escaping @Sendable (ResponseContext) throws -> ResponseVerdict)
        -> ResponseValidator
    {
        var copy = self
        copy.checks.append(check)
        return copy
    }

    /// Runs the checks in order.
    /// - Throws: `CourierError.apiError` for the first refusal, carrying the response, the
    ///   body and the check's error.
    func runChecks(_ context: ResponseContext) throws(CourierError) {
        for check in checks {
            let verdict: ResponseVerdict
            do {
                verdict = try check(context)
            } catch {
                verdict = .refuse(error as (any Error & Sendable), retryable: false)
            }
            guard case .refuse(let reason, let retryable) = verdict else { continue }
            var error = CourierError(
                .apiError, "a response check refused the answer", response: context.response,
                body: context.body)
            error.domainError = reason
            error.refusalIsRetryable = retryable
            throw error
        }
    }
}
