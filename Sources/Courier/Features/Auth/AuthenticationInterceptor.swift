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
    /// The query items `apply` writes (a multi-part credential's, see `CredentialPart`).
    let credentialQueryNames: Set<String>
    /// Whether a credential must be refreshed before it is sent (a token pair past its
    /// expiry); nil: only when the server rejects it.
    let isExpired: (@Sendable (Credential) -> Bool)?

    /// An interceptor that writes the coordinator's credential into each attempt and refreshes
    /// it once for all the calls it rejected.
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
        var names: Set<HTTPField.Name>?
        var queryNames: Set<String> = []
        if let probe = CredentialScope.probe as? Credential {
            (names, queryNames) = Self.names(written: probe, by: apply)
        }
        self.init(
            coordinator: coordinator, maximumAttempts: maximumAttempts, requiresRefresh: requiresRefresh,
            fieldNames: names, queryNames: queryNames, apply: apply)
    }

    /// An interceptor whose fields are known without probing (a multi-part credential's).
    init(
        coordinator: AuthRefreshCoordinator<Credential>, maximumAttempts: Int,
        requiresRefresh: @escaping @Sendable (HTTPResponse) -> Bool, fieldNames: Set<HTTPField.Name>?,
        queryNames: Set<String>, isExpired: (@Sendable (Credential) -> Bool)? = nil,
        apply: @escaping @Sendable (Credential, inout HTTPRequest) -> Void
    ) {
        self.coordinator = coordinator
        self.maximumAttempts = max(1, maximumAttempts)
        self.requiresRefresh = requiresRefresh
        self.apply = apply
        probedFieldNames = fieldNames
        credentialQueryNames = queryNames
        self.isExpired = isExpired
    }

    public func adapt(_ request: PreparedRequest, context: InterceptorContext) async throws -> PreparedRequest {
        if let sync = coordinator.sharedSync.withLock({ $0 }) { await sync() }
        guard var credential = coordinator.current else { return request }
        // Known to be expired: refresh first (once for every call that finds it so), rather than
        // send it to be rejected.
        if let isExpired, isExpired(credential) {
            credential = try await coordinator.credential(replacing: credential, within: context.timeout)
        }
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
        // A rejected credential: the status says so, or the service's envelope rule does.
        guard let response = failure.response,
            requiresRefresh(response) || failure.envelopeMeaning == .refreshCredential
        else { return .doNotRetry }
        // Another origin's 401 (after a redirect) says nothing about the credential.
        guard !failure.isFromAnotherOrigin else { return .doNotRetry }
        guard context.attempt < maximumAttempts else { return .doNotRetry }
        let current = coordinator.current
        // Which credential did the rejected request carry? If applying the current one
        // changes nothing, it was the current one: refresh it. Otherwise the credential
        // changed since (another call refreshed it): just send again. The query is compared
        // item by item, in any order: writing a query part moves its item to the end, behind
        // the items adapters after this one added.
        var sent: Credential?
        if let current {
            var probe = request.head
            apply(current, &probe)
            if probe.headerFields == request.head.headerFields && Self.sameTarget(probe.path, request.head.path) {
                sent = current
            }
        }
        do {
            _ = try await coordinator.credential(replacing: sent, within: context.timeout)
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
    /// Whether two request targets have the same path and the same query items, in any order,
    /// byte for byte.
    static func sameTarget(_ one: String?, _ other: String?) -> Bool {
        guard let one, let other else { return one == nil && other == nil }
        func parts(_ target: String) -> (path: [UInt8], items: [[UInt8]]) {
            let bytes = Array(target.utf8)
            guard let mark = bytes.firstIndex(of: UInt8(ascii: "?")) else { return (bytes, []) }
            let items = bytes[(mark + 1)...].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false)
            return (Array(bytes[..<mark]), items.map(Array.init).sorted { $0.lexicographicallyPrecedes($1) })
        }
        let (a, b) = (parts(one), parts(other))
        return a.path == b.path && a.items == b.items
    }

    /// The header fields and query items the current credential is written into (none when
    /// logged out).
    func currentNames() -> (fields: Set<HTTPField.Name>, queryItems: Set<String>) {
        guard let credential = coordinator.current else { return ([], []) }
        return Self.names(written: credential, by: apply)
    }

    /// The header fields and query items `apply` writes for `credential` into a request that
    /// has none: a query item is a credential as much as a header field (its value is digested
    /// in what the cache stores, and redacted).
    private static func names(
        written credential: Credential, by apply: (Credential, inout HTTPRequest) -> Void
    ) -> (fields: Set<HTTPField.Name>, queryItems: Set<String>) {
        var request = HTTPRequest(method: .get, scheme: "https", authority: "probe.invalid", path: "/")
        apply(credential, &request)
        return (Set(request.headerFields.map(\.name)), request.queryItemNames)
    }

    /// Writes the current credential into `request`, as an attempt would.
    func applyCurrent(to request: inout HTTPRequest) {
        guard let credential = coordinator.current else { return }
        apply(credential, &request)
    }
}

extension AuthenticationInterceptor where Credential == String {
    static func makeBearer(_ coordinator: AuthRefreshCoordinator<String>) -> AuthenticationInterceptor<String> {
        AuthenticationInterceptor(coordinator: coordinator) { token, request in
            request.headerFields[.authorization] = "Bearer \(token)"
        }
    }
}
