import HTTPTypes

/// Attaches a credential to every request and, when the server rejects it (401 by
/// default), refreshes it through an `AuthRefreshCoordinator` — once for all the calls
/// that were rejected at the same time — and has the call sent again with the new one.
///
/// Use one instance per credential store and add it to the client or service as both
/// adapter and retrier.
public struct AuthenticationInterceptor<Credential: Sendable & Equatable>: RequestAdapter, RequestRetrier {
    /// The refresh coordinator (login, logout and refresh go through it).
    let coordinator: AuthRefreshCoordinator<Credential>
    private let apply: @Sendable (Credential, inout HTTPRequest) -> Void
    private let requiresRefresh: @Sendable (HTTPResponse) -> Bool
    /// From this attempt on, a rejected credential no longer asks for a refresh-then-retry.
    /// A limit inside the call's one cap (`ServiceConfiguration.maximumAttempts`, which wins
    /// when smaller; see `RetryDecision`).
    let maximumAttempts: Int
    /// The header fields `apply` writes, probed once with a placeholder credential (for
    /// `String` credentials): what the service treats as credential fields. A field `apply`
    /// writes outside this set would escape the credential scope, so `adapt` refuses it.
    let probedFieldNames: Set<HTTPField.Name>?

    /// - Parameters:
    ///   - coordinator: refreshes the credential.
    ///   - maximumAttempts: the most attempts a call gets (the first one included).
    ///   - requiresRefresh: which responses mean "credential rejected"; 401 by default.
    ///   - apply: writes the credential into a request (a header, a query item, …).
    public init(
        coordinator: AuthRefreshCoordinator<Credential>, maximumAttempts: Int = 3,
        requiresRefresh: @escaping @Sendable (HTTPResponse) -> Bool = { $0.status == .unauthorized },
        apply: @escaping @Sendable (Credential, inout HTTPRequest) -> Void
    ) {
        self.coordinator = coordinator
        self.maximumAttempts = max(1, maximumAttempts)
        self.requiresRefresh = requiresRefresh
        self.apply = apply
        if let probe = CredentialScope.probe as? Credential {
            var request = HTTPRequest(method: .get, scheme: "https", authority: "probe.invalid", path: "/")
            apply(probe, &request)
            probedFieldNames = Set(request.headerFields.map(\.name))
        } else {
            probedFieldNames = nil
        }
    }

    public func adapt(_ request: PreparedRequest, context: InterceptorContext) async throws -> PreparedRequest {
        guard let credential = coordinator.current else { return request }
        var request = request
        let before = request.head.headerFields
        apply(credential, &request.head)
        if let probed = probedFieldNames {
            // A field chosen by the credential's value (`sk_…` → X-Secret-Key) is not one the
            // probe saw: it would go to other origins and stay out of the identities.
            for field in request.head.headerFields where !probed.contains(field.name) {
                guard before[values: field.name] == request.head.headerFields[values: field.name] else {
                    throw CourierError(
                        .configuration,
                        "the authentication interceptor wrote \(field.name.rawName), a field it does not write for "
                            + "every credential; write the credential into the same fields whatever its value")
                }
            }
        }
        return request
    }

    public func retry(_ request: PreparedRequest, failure: AttemptFailure, context: InterceptorContext) async
        -> RetryVerdict
    {
        guard let response = failure.response, requiresRefresh(response) else { return .doNotRetry }
        // Another origin's 401 (after a redirect) says nothing about the credential.
        guard !failure.isFromAnotherOrigin else { return .doNotRetry }
        guard context.attempt < maximumAttempts else { return .doNotRetry }
        let current = coordinator.current
        // Which credential did the rejected request carry? If applying the current one
        // changes nothing, it was the current one: refresh it. Otherwise the credential
        // changed since (another call refreshed it): just send again.
        var sent: Credential?
        if let current {
            var probe = request.head
            apply(current, &probe)
            if probe.headerFields == request.head.headerFields && probe.path == request.head.path { sent = current }
        }
        do {
            _ = try await coordinator.credential(replacing: sent)
            return .retry
        } catch let error as CourierError {
            var error = error
            error.response = response
            return .fail(error)
        } catch {
            return .fail(CourierError(.authentication, "the credential could not be refreshed", underlying: error))
        }
    }
}

extension AuthenticationInterceptor {
    /// Writes the current credential into `request`, as an attempt would.
    func applyCurrent(to request: inout HTTPRequest) {
        guard let credential = coordinator.current else { return }
        apply(credential, &request)
    }
}

extension AuthenticationInterceptor where Credential == String {
    /// The header fields the interceptor writes, found by applying a probe credential once.
    var credentialFieldNames: Set<HTTPField.Name> { probedFieldNames ?? [] }

    /// Sends the token as `Authorization: Bearer <token>`.
    /// - Parameter coordinator: refreshes the token.
    public static func bearer(_ coordinator: AuthRefreshCoordinator<String>) -> AuthenticationInterceptor<String> {
        AuthenticationInterceptor(coordinator: coordinator) { token, request in
            request.headerFields[.authorization] = "Bearer \(token)"
        }
    }
}
