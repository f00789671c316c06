import Foundation
import HTTPTypes

/// What an adapter or retrier knows about the call it works on.
public struct InterceptorContext: Sendable {
    /// The call's identifier.
    public var callID: CallID
    /// The attempt being prepared (adapters) or the one that just failed (retriers); 1-based.
    public var attempt: Int
    /// The call's free-form values.
    public var userInfo: UserInfo
    /// The call's timeout (nil: none): the longest its wait for a credential refresh lasts.
    var timeout: Duration?

    init(callID: CallID, attempt: Int, userInfo: UserInfo = UserInfo(), timeout: Duration? = nil) {
        self.callID = callID
        self.attempt = attempt
        self.userInfo = userInfo
        self.timeout = timeout
    }
}

/// How an attempt ended, as retriers see it: a response the call does not accept, or an error.
public struct AttemptFailure: Sendable {
    /// The response head, when the server answered.
    public var response: HTTPResponse?
    /// The response body, when the server answered.
    public var body: Data?
    /// The error the attempt would end the call with.
    public var error: CourierError
    /// Whether the response came from another origin than the request was sent to (after a
    /// redirect): it never rejected the call's credential, which was not sent there.
    var isFromAnotherOrigin = false
    /// Whether a response check refused the answer and marked the refusal retryable.
    var isRetryableRefusal = false

    init(response: HTTPResponse? = nil, body: Data? = nil, error: CourierError) {
        self.response = response
        self.body = body
        self.error = error
    }
}

/// A retrier's verdict.
public enum RetryVerdict: Sendable {
    /// Send again now.
    case retry
    /// Send again after a delay.
    case retryAfter(Duration)
    /// This retrier has no opinion: ask the next one.
    case doNotRetry
    /// Stop and end the call with this error (for example a refresh that failed).
    case fail(CourierError)
}

/// Changes a request before each attempt: adds a header, signs it, rewrites it.
///
/// Adapters run in a defined order: the client's, then the service's, then the call's,
/// each list in order; every attempt (retries included) is adapted again from the original.
public protocol RequestAdapter: Sendable {
    /// Returns the request to send.
    /// - Throws: any error; the call fails with it (as a `CourierError`) without sending.
    func adapt(_ request: PreparedRequest, context: InterceptorContext) async throws -> PreparedRequest
}

/// Decides whether a failed attempt is sent again.
///
/// Retriers are asked in order — the call's, then the service's, then the client's; the
/// first verdict other than `.doNotRetry` wins, and the call's `RetryPolicy` is asked last.
/// A verdict is an opinion: `RetryDecision` ends the call after
/// `ServiceConfiguration.maximumAttempts` sends whatever it says.
public protocol RequestRetrier: Sendable {
    /// Judges a failed attempt.
    /// - Parameters:
    ///   - request: the request as sent.
    ///   - failure: what went wrong.
    ///   - context: the call and attempt.
    /// - Returns: the verdict.
    func retry(_ request: PreparedRequest, failure: AttemptFailure, context: InterceptorContext) async -> RetryVerdict
}

/// An adapter made of a closure.
public struct ClosureRequestAdapter: RequestAdapter {
    private let body: @Sendable (PreparedRequest, InterceptorContext) async throws -> PreparedRequest

    init(_ body: @escaping @Sendable (PreparedRequest, InterceptorContext) async throws -> PreparedRequest) {
        self.body = body
    }

    /// Runs the closure on `request`.
    public func adapt(_ request: PreparedRequest, context: InterceptorContext) async throws -> PreparedRequest {
        try await body(request, context)
    }
}

/// A retrier made of a closure.
public struct ClosureRequestRetrier: RequestRetrier {
    private let body: @Sendable (PreparedRequest, AttemptFailure, InterceptorContext) async -> RetryVerdict

    init(_ body: @escaping @Sendable (PreparedRequest, AttemptFailure, InterceptorContext) async -> RetryVerdict) {
        self.body = body
    }

    /// Runs the closure on the failed attempt.
    public func retry(_ request: PreparedRequest, failure: AttemptFailure, context: InterceptorContext) async
        -> RetryVerdict
    {
        await body(request, failure, context)
    }
}

extension RequestAdapter where Self == ClosureRequestAdapter {
    /// An adapter from a closure: `.adapter { request, context in … }`.
    public static func adapter(
        _ body: @escaping @Sendable (PreparedRequest, InterceptorContext) async throws -> PreparedRequest
    ) -> ClosureRequestAdapter {
        ClosureRequestAdapter(body)
    }

    /// Sets a header on every request (replacing a value already there).
    public static func header(_ name: HTTPField.Name, _ value: String) -> ClosureRequestAdapter {
        ClosureRequestAdapter { request, _ in
            var request = request
            request.head.headerFields[name] = value
            return request
        }
    }
}

extension RequestRetrier where Self == ClosureRequestRetrier {
    /// A retrier from a closure: `.retrier { request, failure, context in … }`.
    public static func retrier(
        _ body: @escaping @Sendable (PreparedRequest, AttemptFailure, InterceptorContext) async -> RetryVerdict
    ) -> ClosureRequestRetrier {
        ClosureRequestRetrier(body)
    }
}

/// Runs adapters in order, and asks retriers in order.
struct InterceptorChain: Sendable {
    var adapters: [any RequestAdapter] = []
    var retriers: [any RequestRetrier] = []

    init(adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = []) {
        self.adapters = adapters
        self.retriers = retriers
    }

    /// A call's chain: adapters authentication first, then the service's, then the call's;
    /// retriers the call's first, then authentication, then the service's.
    /// Without `authentication` for a call to a server that gets no credential.
    init(configuration: ServiceConfiguration, options: CallOptions, authentication: Bool = true) {
        let auth = authentication ? configuration.authentication : nil
        if let auth { adapters.append(auth) }
        adapters += configuration.adapters + options.adapters
        retriers = options.retriers
        if let auth { retriers.append(auth) }
        retriers += configuration.retriers
    }

    func adapt(_ request: PreparedRequest, context: InterceptorContext) async throws(CourierError) -> PreparedRequest {
        var current = request
        for adapter in adapters {
            do {
                current = try await adapter.adapt(current, context: context)
            } catch let error as CourierError {
                throw error
            } catch is CancellationError {
                throw CourierError(.cancelled, "the call was cancelled while its request was adapted")
            } catch {
                throw CourierError(.invalidRequest, "a request adapter failed: \(error)", underlying: error)
            }
        }
        return current
    }

    func retry(_ request: PreparedRequest, failure: AttemptFailure, context: InterceptorContext) async -> RetryVerdict {
        for retrier in retriers {
            let verdict = await retrier.retry(request, failure: failure, context: context)
            if case .doNotRetry = verdict { continue }
            return verdict
        }
        return .doNotRetry
    }
}
