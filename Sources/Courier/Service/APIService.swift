import Foundation
import HTTPTypes

/// A domain service: a `Sendable` struct (or final class) that holds a ``ServiceCore`` and
/// has one method per endpoint.
///
/// ```swift
/// struct UserService: APIService {
///     let core: ServiceCore
///     func user(id: Int) async throws(CourierError) -> User { try await get("users/\(id)") }
/// }
/// let users = UserService(core: ServiceCore(client: client))
/// ```
///
/// The compiler checks the service like any `Sendable` type: a struct's stored properties
/// must be `Sendable`, a final class's immutable too (mutable state goes in a lock such as
/// `Synchronization.Mutex`, or in an actor), so the service is usable from `@MainActor` code
/// and from any task without annotations.
///
/// The protocol gives the verbs (`get`, `post`, …, `send`, `call`, `start`, `paginator`) and
/// nothing else: housekeeping (`logIn`, `logOut`, `calls.cancelAll()`, `client`,
/// `configuration`) lives on `core`, so an endpoint of your own named `logOut()` is never
/// shadowed by a base member.
///
/// Every call gets an identifier, is registered in `core.calls`, and goes through the
/// pipeline described in `APIService+Pipeline.swift`: compose the URL, add general
/// parameters, encode, adapt, gate (veto, interval, de-duplication), send, retry or refresh
/// the credential, fail over, validate, preprocess and decode.
public protocol APIService: Sendable {
    /// The client, the defaults and the calls in flight; share one between services of a
    /// domain, or give each its own.
    var core: ServiceCore { get }
}

extension APIService {
    // MARK: Verbs

    /// GETs `path` and decodes the answer.
    ///
    /// Every verb infers the model from the context (`let user: User = try await get(…)`;
    /// `let _: Empty = try await delete(…)` for an answer without a body) and takes the same
    /// labels everywhere (verbs and `Endpoint`): `parameters:` for the query string, `body:` for
    /// the body, whatever the method and the request serializer.
    /// - Parameters:
    ///   - path: relative to the server (`users/42`).
    ///   - parameters: encoded into the query string.
    ///   - type: the model type.
    ///   - serializer: reads this call's answer instead of the service's default format
    ///     (`.string`, `.protobuf(User.self)`, …).
    ///   - options: per-call settings.
    /// - Returns: the decoded model.
    /// - Throws: `CourierError`.
    public func get<Model: Decodable & Sendable>(
        _ path: String, parameters: (any Encodable & Sendable)? = nil, as type: Model.Type = Model.self,
        serializer: (any ResponseSerializer<Model>)? = nil, options: CallOptions = .default
    ) async throws(CourierError) -> Model {
        try await value(.get, path, query: parameters, serializer, options)
    }

    /// POSTs `body` (encoded by the request serializer) to `path` and decodes the answer.
    public func post<Model: Decodable & Sendable>(
        _ path: String, body: (any Encodable & Sendable)? = nil, as type: Model.Type = Model.self,
        serializer: (any ResponseSerializer<Model>)? = nil, options: CallOptions = .default
    ) async throws(CourierError) -> Model {
        try await value(.post, path, body: body, serializer, options)
    }

    /// PUTs `body` to `path` and decodes the answer.
    public func put<Model: Decodable & Sendable>(
        _ path: String, body: (any Encodable & Sendable)? = nil, as type: Model.Type = Model.self,
        serializer: (any ResponseSerializer<Model>)? = nil, options: CallOptions = .default
    ) async throws(CourierError) -> Model {
        try await value(.put, path, body: body, serializer, options)
    }

    /// PATCHes `path` with `body` and decodes the answer.
    public func patch<Model: Decodable & Sendable>(
        _ path: String, body: (any Encodable & Sendable)? = nil, as type: Model.Type = Model.self,
        serializer: (any ResponseSerializer<Model>)? = nil, options: CallOptions = .default
    ) async throws(CourierError) -> Model {
        try await value(.patch, path, body: body, serializer, options)
    }

    /// DELETEs `path` (parameters in the query string) and decodes the answer (`Empty` for none).
    public func delete<Model: Decodable & Sendable>(
        _ path: String, parameters: (any Encodable & Sendable)? = nil, as type: Model.Type = Model.self,
        serializer: (any ResponseSerializer<Model>)? = nil, options: CallOptions = .default
    ) async throws(CourierError) -> Model {
        try await value(.delete, path, query: parameters, serializer, options)
    }

    /// The verbs' one body: the call with the call's serializer, its value
    /// (`ServiceCore+Run.swift`).
    @inline(__always)  // one async frame and one set of generic metadata lookups fewer per call
    private func value<Model: Decodable & Sendable>(
        _ method: HTTPRequest.Method, _ path: String, query: (any Encodable & Sendable)? = nil,
        body: (any Encodable & Sendable)? = nil, _ serializer: (any ResponseSerializer<Model>)?,
        _ options: CallOptions
    ) async throws(CourierError) -> Model {
        try await core.value(method, path, query: query, body: body, serializer, options)
    }

    /// HEADs `path`.
    /// - Returns: the response head.
    public func head(
        _ path: String, parameters: (any Encodable & Sendable)? = nil, options: CallOptions = .default
    ) async throws(CourierError) -> HTTPResponse {
        try await core.send(Endpoint<Empty>(.head, path, parameters: parameters, options: options)).response
    }

    // MARK: Endpoints and calls

    /// Sends an endpoint whose model is `Decodable`, with the service's default format.
    /// - Returns: the value with the response, metrics and attempts.
    /// - Throws: `CourierError`.
    public func send<Model: Decodable & Sendable>(_ endpoint: Endpoint<Model>) async throws(CourierError)
        -> Response<Model>
    {
        try await core.send(endpoint)
    }

    /// Sends an endpoint with its own response serializer.
    /// - Throws: `CourierError.configuration` when the endpoint names no serializer.
    public func send<Model: Sendable>(_ endpoint: Endpoint<Model>) async throws(CourierError) -> Response<Model> {
        try await core.send(endpoint)
    }

    /// Builds the call for an endpoint without starting it (deferred start): start it later,
    /// queue it, cancel it, or use the callback API on it.
    public func call<Model: Decodable & Sendable>(_ endpoint: Endpoint<Model>) -> Call<Response<Model>> {
        core.call(endpoint)
    }

    /// Builds the call for an endpoint with its own serializer, without starting it.
    public func call<Model: Sendable>(_ endpoint: Endpoint<Model>) -> Call<Response<Model>> {
        core.call(endpoint)
    }
}

/// What a service's calls run on: the client, the service's defaults and its calls in
/// flight, with the session's housekeeping (log in, log out).
///
/// It is an ``APIService`` itself, for calls that need no domain type:
/// `try await ServiceCore(client: client).get("status")`.
public final class ServiceCore: APIService {
    /// The client calls are sent through.
    public let client: HTTPClient
    /// The defaults of this service's calls.
    public let configuration: ServiceConfiguration
    /// The calls of this service that have not finished: `calls.cancel(id)`, `calls.cancelAll()`.
    public let calls = CallRegistry()
    /// Itself.
    public var core: ServiceCore { self }
    private let session: SessionObserver
    /// Forwards the client's cache events to this service's monitors while the service lives.
    private let cacheObservation: CacheObservation?
    /// Work every call would repeat, done once: neither the client's configuration nor the
    /// service's changes after `init`.
    let prepared: PreparedService
    /// The defaults that can change at run time (see `ServiceCore+Settings.swift`).
    let live: LockedValue<LiveServiceSettings>
    /// A number no other service of the process has had: in the key under which the calls of
    /// a service with adapters share a GET, which another service's adapters (from a copy of
    /// the same configuration, one user's each) may not match.
    let identityNumber = IdentityNumber.next()

    /// A service core sending through `client` with `configuration`'s defaults.
    /// - Parameters:
    ///   - client: the client to send through (shared by every service of an app).
    ///   - configuration: the service's defaults (share one value for a global configuration).
    public init(client: HTTPClient, configuration: ServiceConfiguration = ServiceConfiguration()) {
        self.client = client
        self.configuration = configuration
        self.prepared = PreparedService(client: client, configuration: configuration)
        self.live = LockedValue(
            LiveServiceSettings(settings: Settings(configuration), acceptField: prepared.acceptField))
        self.session = SessionObserver(
            center: client.configuration.notificationCenter, scope: client.configuration.sessionScope,
            authentication: configuration.credentials, cookieJar: configuration.cookieJar,
            cache: client.configuration.cache)
        let monitors = configuration.monitors
        self.cacheObservation =
            monitors.isEmpty
            ? nil
            : client.configuration.cache?.addObserver { event in
                for monitor in monitors { monitor.didObserveCache(event) }
            }
    }

    deinit {
        session.stop()
        cacheObservation?.cancel()
    }

    /// Sends an endpoint whose model is `Decodable`, with the service's default format.
    @inline(__always)
    func send<Model: Decodable & Sendable>(_ endpoint: Endpoint<Model>) async throws(CourierError)
        -> Response<Model>
    {
        guard let serializer = endpoint.serializer else {
            return try await run(
                endpoint, serializer: DecodableResponseSerializer(Model.self, anyDecoding: prepared.decoding),
                acceptHeader: prepared.acceptHeader)
        }
        return try await run(endpoint, serializer: serializer, acceptHeader: serializer.acceptHeader)
    }

    /// Sends an endpoint with its own response serializer.
    func send<Model: Sendable>(_ endpoint: Endpoint<Model>) async throws(CourierError) -> Response<Model> {
        guard let serializer = endpoint.serializer else {
            throw CourierError(.configuration, "the endpoint for \(Model.self) names no response serializer")
        }
        return try await run(endpoint, serializer: serializer, acceptHeader: serializer.acceptHeader)
    }

    /// Builds the call for an endpoint without starting it (deferred start): start it later,
    /// queue it, cancel it, or use the callback API on it.
    func call<Model: Decodable & Sendable>(_ endpoint: Endpoint<Model>) -> Call<Response<Model>> {
        guard let serializer = endpoint.serializer else {
            // The service's format: its Accept header is known already.
            return makeCall(
                endpoint, serializer: DecodableResponseSerializer(Model.self, anyDecoding: prepared.decoding),
                acceptHeader: prepared.acceptHeader)
        }
        return makeCall(endpoint, serializer: serializer, acceptHeader: serializer.acceptHeader)
    }

    /// Builds the call for an endpoint with its own serializer, without starting it.
    func call<Model: Sendable>(_ endpoint: Endpoint<Model>) -> Call<Response<Model>> {
        guard let serializer = endpoint.serializer else {
            let call = Call<Response<Model>> {
                throw CourierError(.configuration, "the endpoint for \(Model.self) names no response serializer")
            }
            calls.register(call)
            return call
        }
        return makeCall(endpoint, serializer: serializer, acceptHeader: serializer.acceptHeader)
    }

    private func makeCall<Model: Sendable>(
        _ endpoint: Endpoint<Model>, serializer: any ResponseSerializer<Model>, acceptHeader: String?
    ) -> Call<Response<Model>> {
        let id = CallID.next()
        let call = Call<Response<Model>>(id: id) { [self] in
            try await perform(endpoint, serializer: serializer, acceptHeader: acceptHeader, id: id)
        }
        calls.register(call)
        return call
    }

    // MARK: Session

    /// Logs in: the client and the authentication interceptor use `credential` from now on.
    /// - Throws: `CourierError.invalidRequest` when the credential contains CR, LF or NUL.
    public func logIn(credential: String) throws(CourierError) {
        try client.logIn(credential: credential)
        configuration.credentials?.logIn(with: credential)
    }

    /// Logs out: no credential is sent or refreshed, cookies are cleared, and the user's cached
    /// responses are dropped.
    ///
    /// With an authentication interceptor or a cookie jar, each refreshed token or rotated
    /// cookie owns the entries fetched with it, and not all of them are known any more: every
    /// entry fetched with a credential is dropped (entries fetched without one stay).
    public func logOut() {
        client.logOut()
        session.endSession()
    }
}

/// What a service computes once instead of on every call.
struct PreparedService: Sendable {
    /// How `Decodable` models are read: the service's choice, else the client's default
    /// response type.
    let decoding: any ModelDecoding
    /// The `Accept` header of the service's model format.
    let acceptHeader: String?
    /// The same as a field.
    let acceptField: HTTPField?
    /// The service's adapters and retriers (authentication first), for calls that add none.
    let chain: InterceptorChain
    /// The same without authentication, for calls to a server that gets no credential.
    let chainWithoutCredential: InterceptorChain
    /// The header fields that carry a credential: the client's and the authentication
    /// interceptor's. Dropped across origins, redacted in logs, digested in the identity.
    let credentialFieldNames: Set<HTTPField.Name>
    /// Those the client does not know of (the interceptor's), handed to it with each request.
    let extraCredentialNames: Set<HTTPField.Name>
    /// The query items the authentication writes (a multi-part credential's): redacted in the
    /// monitors' logs, digested in the identities and in what the cache stores.
    let credentialQueryNames: Set<String>
    /// The authentication's credential as the identity reads it (`ServiceConfiguration.credentials`,
    /// a dynamic cast made once here rather than per call).
    let credentials: (any CredentialCarrying)?
    /// Whether the service has adapters of the app's own, which may write anything into a
    /// call's request after its identity was made (from its `userInfo`: a tenant; or from the
    /// service's own state: its user): its `adapters`, and an `authentication` that is not an
    /// `AuthenticationInterceptor` (whose fields and credential the identity knows).
    let hasOwnAdapters: Bool
    /// Whether the authentication's fields are read per attempt (`CredentialCarrying.knowsItsFields`):
    /// a credential of another type than `String` cannot be probed when the service is made.
    let readsCredentialFieldsPerAttempt: Bool
    /// The request head of the last endpoint called, its path checked.
    let heads = RequestHeadCache()
    /// The plans of the service's last calls (`CallPlan`).
    let plans = CallPlanCache()

    init(client: HTTPClient, configuration: ServiceConfiguration) {
        decoding = configuration.decoding ?? client.configuration.decoding
        acceptHeader = DecodableResponseSerializer<Empty>(anyDecoding: decoding).acceptHeader
        acceptField = acceptHeader.map { HTTPField(name: .accept, value: $0) }
        chain = InterceptorChain(configuration: configuration, options: CallOptions())
        chainWithoutCredential = InterceptorChain(
            configuration: configuration, options: CallOptions(), authentication: false)
        credentials = configuration.credentials
        hasOwnAdapters = !configuration.adapters.isEmpty || (configuration.authentication != nil && credentials == nil)
        readsCredentialFieldsPerAttempt = credentials.map { !$0.knowsItsFields } ?? false
        extraCredentialNames = credentials?.credentialFieldNames.subtracting(client.credentialFieldNames) ?? []
        credentialFieldNames = client.credentialFieldNames.union(extraCredentialNames)
        credentialQueryNames = credentials?.credentialQueryNames ?? []
    }
}

/// Follows the client's login and logout notifications for a service's authentication
/// interceptor, cookie jar and the credentialed entries of the client's cache.
final class SessionObserver: Sendable {
    /// `@unchecked Sendable`: a token is an opaque handle given back only to the thread-safe
    /// `NotificationCenter` that made it.
    private struct Token: @unchecked Sendable { let value: any NSObjectProtocol }
    private let center: NotificationCenter
    private let tokens: [Token]
    private let authentication: (any CredentialCarrying)?
    private let cookieJar: CookieJar?
    private let cache: HostScopedCache?

    init(
        center: NotificationCenter, scope: SessionScope?, authentication: (any CredentialCarrying)?,
        cookieJar: CookieJar?, cache: HostScopedCache?
    ) {
        self.center = center
        self.authentication = authentication
        self.cookieJar = cookieJar
        self.cache = cache
        guard authentication != nil || cookieJar != nil else {
            tokens = []
            return
        }
        // `object: nil` and a check of our own: the center compares senders by identity, and a
        // scope name is a `String`, boxed anew for each notification.
        let login = center.addObserver(forName: .courierUserDidLogIn, object: nil, queue: nil) { notification in
            guard scope.follows(notification.object) else { return }
            // A token, or a multi-part credential of the interceptor's type.
            guard let credential = notification.userInfo?[CourierNotificationKey.credential] else { return }
            // A token the client refuses ends the session before it here too (`HTTPClient.handle`).
            if let token = credential as? String, HTTPClient.breaksAHeader(token) {
                Self.endSession(authentication: authentication, cookieJar: cookieJar, cache: cache)
                return
            }
            authentication?.logIn(with: credential)
        }
        // The observer holds the parts, not `self`: `stop()` runs from the service's deinit.
        let logout = center.addObserver(forName: .courierUserDidLogOut, object: nil, queue: nil) { notification in
            guard scope.follows(notification.object) else { return }
            Self.endSession(authentication: authentication, cookieJar: cookieJar, cache: cache)
        }
        tokens = [Token(value: login), Token(value: logout)]
    }

    /// Forgets the session: the interceptor's credential, the cookies, and every credentialed
    /// cache entry (refreshed tokens and rotated cookies each own entries, and not all of them
    /// are known any more). Does nothing for a service with neither an interceptor nor a jar.
    func endSession() {
        Self.endSession(authentication: authentication, cookieJar: cookieJar, cache: cache)
    }

    private static func endSession(
        authentication: (any CredentialCarrying)?, cookieJar: CookieJar?, cache: HostScopedCache?
    ) {
        guard authentication != nil || cookieJar != nil else { return }
        authentication?.logOut()
        cookieJar?.logOut()
        cache?.purgeAllIdentities()
    }

    func stop() {
        for token in tokens { center.removeObserver(token.value) }
    }
}
