import Foundation
import HTTPTypes
import Logging

extension Notification.Name {
    /// Post after a user logged in, with the credential (a token `String`) in `userInfo`
    /// under `CourierNotificationKey.credential`. Every client observing the center (of the
    /// notification's `SessionScope`, for a client with one) sends the auth header from the
    /// next request on.
    public static let courierUserDidLogIn = Notification.Name("CourierUserDidLogIn")
    /// Post after the user logged out. Clients (of its `SessionScope`) stop sending the auth header.
    public static let courierUserDidLogOut = Notification.Name("CourierUserDidLogOut")
}

/// Keys of the `userInfo` of Courier's notifications.
public enum CourierNotificationKey {
    /// The credential (a `String` token) in a `courierUserDidLogIn` notification.
    public static let credential = "CourierCredential"
}

/// Sends HTTP requests: one per app (or per back end), shared by every service.
///
/// Thread-safe. Requests go through one `Transport` (by default a `CurlTransport` with its
/// own thread and connection pool). The auth header follows login and logout, either by
/// notification (`Notification.Name.courierUserDidLogIn`) or by `logIn(credential:)`; a
/// request in flight keeps the header it started with.
public final class HTTPClient: Sendable {
    /// The configuration the client was made with.
    public let configuration: Configuration
    /// The transport requests go through.
    package let transport: any Transport
    /// The credential's fields and the origins that receive it (see `CredentialScope.swift`).
    let credentialScope: CredentialScope
    /// The client's own cookie jar (`configuration.cookieJar`, or one made for `enablesCookieEngine`).
    let cookieJar: CookieJar?
    /// The tracer and metrics calls report to (none when nothing is bootstrapped).
    let telemetry: Telemetry
    /// This client in a `RequestIdentity`: a number no other client of the process has had.
    /// Not its address, which the allocator gives the next client once this one is released,
    /// while the gates of a shared service configuration still hold keys made with it.
    let identityNumber = IdentityNumber.next()

    struct State {
        var credential: String?
        /// Moves on at every logout: a response to a request of an earlier session is not cached.
        var sessionGeneration: UInt64 = 0
        /// The cache identities this session's requests went out with, purged at logout.
        var sessionIdentities: Set<StoredIdentity> = []
        /// More identities than `sessionIdentities` keeps were seen: logout purges every
        /// credentialed entry.
        var sessionIdentitiesOverflowed = false
    }
    let state = LockedValue(State())
    /// The settings that can change at run time (see `HTTPClient+Settings.swift`).
    let live: LockedValue<LiveSettings>
    private let observers: ObserverTokens

    /// Makes a client over libcurl.
    /// - Parameter configuration: Base URL, timeouts, limits, TLS and auth settings.
    /// - Throws: `CourierError.configuration` when the configuration cannot work (a timeout of
    ///   zero, a base URL that is not an http or https URL with a host, …).
    public convenience init(configuration: Configuration = .init()) throws(CourierError) {
        try self.init(configuration: configuration, transport: nil)
    }

    /// Makes a client over another transport (tests, the demo).
    /// - Parameters:
    ///   - configuration: Base URL, timeouts, limits, TLS and auth settings.
    ///   - transport: The transport to use; `nil` makes a `CurlTransport` from `configuration`.
    package init(configuration: Configuration = .init(), transport: (any Transport)?) throws(CourierError) {
        let configuration = try configuration.validated()
        for field in configuration.defaultHeaders { try RequestValidation.validate(field) }
        self.configuration = configuration
        let scope = try CredentialScope(configuration: configuration)
        let settings = LiveSettings(Settings(configuration), credentialFieldNames: scope.fieldNames)
        try settings.refuseUnusableBaseURL()
        live = LockedValue(settings)
        credentialScope = scope
        cookieJar = configuration.cookieJar ?? (configuration.enablesCookieEngine ? CookieJar() : nil)
        telemetry = Telemetry(tracer: configuration.tracer, metricsFactory: configuration.metricsFactory)
        if let transport {
            self.transport = transport
        } else {
            self.transport = try CurlTransport(configuration: configuration.transportConfiguration)
        }
        observers = ObserverTokens(center: configuration.notificationCenter)
        observers.observe(self)
    }

    deinit {
        observers.removeAll()
    }

    // MARK: Credentials

    /// Sends the auth header built from `credential` with every request from now on.
    ///
    /// Replacing another credential without `logOut()` keeps that user's cached responses;
    /// the next `logOut()` purges those of the new one.
    /// - Throws: `CourierError.invalidRequest` when the credential contains CR, LF or NUL;
    ///   `CourierError.configuration` when the `authorization` builder makes, for this
    ///   credential, a field it did not make when the client asked it which fields carry the
    ///   credential (list that field in `sensitiveHeaderNames`).
    public func logIn(credential: String) throws(CourierError) {
        try check(credential)
        state.withLock { state in
            // Another user replaces the current one without a logout: what the session stored
            // stays the previous user's (logout then purges only the new user's).
            if let current = state.credential, current != credential {
                state.sessionIdentities = []
                state.sessionIdentitiesOverflowed = false
            }
            state.credential = credential
        }
        configuration.logger.debug("courier: logged in")
    }

    /// Replaces the credential with a renewed one (a token refresh), only while `expired` is
    /// still the client's credential: the same session goes on (`logOut()` purges the cached
    /// responses fetched with either).
    ///
    /// Call this in a refresher, rather than `logIn(credential:)`: a refresh that ends after the
    /// user logged out, or after another user logged in, leaves the client as it is, and the
    /// next user's requests never carry the previous user's new token.
    /// - Parameters:
    ///   - credential: the renewed credential.
    ///   - expired: the credential it renews (the one the refresh was asked for).
    /// - Returns: whether the credential was replaced: false when `expired` is no longer the
    ///   client's credential (a logout, or another login, came first).
    /// - Throws: what `logIn(credential:)` throws for `credential`.
    @discardableResult
    public func logIn(credential: String, replacing expired: String) throws(CourierError) -> Bool {
        try check(credential)
        let replaced = state.withLock { state in
            // The same bytes: `==` takes canonically equivalent strings for equal.
            guard let current = state.credential, current.utf8.elementsEqual(expired.utf8) else { return false }
            state.credential = credential
            return true
        }
        configuration.logger.debug(replaced ? "courier: credential renewed" : "courier: a renewal came too late")
        return replaced
    }

    /// Whether `credential` holds CR, LF or NUL, which no header field can carry.
    static func breaksAHeader(_ credential: String) -> Bool {
        credential.utf8.contains { $0 == 0 || $0 == 10 || $0 == 13 }
    }

    /// Refuses a credential that cannot be sent as is.
    /// - Throws: `CourierError.invalidRequest` for CR, LF or NUL; `.configuration` for a field
    ///   the `authorization` builder makes that the credential scope does not know.
    private func check(_ credential: String) throws(CourierError) {
        guard !Self.breaksAHeader(credential) else {
            throw CourierError(.invalidRequest, "the credential contains CR, LF or NUL")
        }
        // A field the scope does not know would follow a redirect to another origin and miss
        // the cache identity: refuse it loudly rather than leak it quietly.
        let scope = credentialScope.fieldNames
        if let unknown = configuration.authorization.build(credential).first(where: { !scope.contains($0.name) }) {
            throw CourierError(
                .configuration,
                "the authorization builder made \(unknown.name) for this credential but not for the probe; "
                    + "list it in sensitiveHeaderNames")
        }
    }

    /// Stops sending the auth header, and drops the cached responses of the session: those
    /// fetched with the credential, and those fetched with any other credential field (cookies,
    /// a custom key header) by this client since login. A response that arrives after this,
    /// to a request sent before, is not cached. A service call that began before fails at its
    /// next attempt with `.authentication`: it never goes on with the next session's credential.
    public func logOut() {
        let ended = state.withLock { state in
            defer {
                state.credential = nil
                state.sessionGeneration &+= 1
                state.sessionIdentities = []
                state.sessionIdentitiesOverflowed = false
            }
            return state
        }
        let fields = ended.credential.map { configuration.authorization.build($0) } ?? []
        purgeCache(for: fields, session: ended)
        cookieJar?.logOut()
        configuration.logger.debug("courier: logged out")
    }

    /// Whether a credential is set.
    public var isLoggedIn: Bool { state.withLock { $0.credential != nil } }

    /// Moves on at each logout.
    var sessionGeneration: UInt64 { state.withLock { $0.sessionGeneration } }

    /// The auth fields for a request starting now.
    func authorizationFields() -> [HTTPField] {
        guard let credential = state.withLock({ $0.credential }) else { return [] }
        return configuration.authorization.build(credential)
    }

    /// The auth fields for a request of a call that began in `session` (nil: of no call).
    /// - Throws: `CourierError.authentication` when that session ended (a logout since).
    func authorizationFields(session: UInt64?) throws(CourierError) -> [HTTPField] {
        guard let session else { return authorizationFields() }
        let (credential, current) = state.withLock { ($0.credential, $0.sessionGeneration) }
        guard current == session else { throw .sessionEnded }
        return credential.map(configuration.authorization.build) ?? []
    }

    fileprivate func handle(_ notification: Notification) {
        guard configuration.sessionScope.follows(notification.object) else { return }
        if notification.name == .courierUserDidLogOut {
            logOut()
            return
        }
        guard let credential = notification.userInfo?[CourierNotificationKey.credential] as? String else {
            configuration.logger.warning(
                "courier: login notification ignored: its userInfo has no String under CourierNotificationKey.credential; the client's credential is unchanged"
            )
            return
        }
        do {
            try logIn(credential: credential)
        } catch {
            // Someone else's session begins: the one before it ends even so. Kept, its
            // credential went on with the requests of the user who just logged in.
            logOut()
            configuration.logger.warning(
                "courier: login notification refused: \(error.message); the previous credential is dropped")
        }
    }
}

extension CourierError {
    /// What a call fails with at an attempt after a logout ended the session it began in.
    static var sessionEnded: CourierError {
        CourierError(
            .authentication, "logged out during the call: it is not sent again with the credential of a later session")
    }
}

/// The observer tokens of one client.
private final class ObserverTokens: Sendable {
    /// `@unchecked Sendable`: a token is an opaque handle we never use except to give it back
    /// to the thread-safe `NotificationCenter` that made it.
    private struct Token: @unchecked Sendable {
        let value: any NSObjectProtocol
    }

    private let center: NotificationCenter
    private let tokens = LockedValue<[Token]>([])

    init(center: NotificationCenter) { self.center = center }

    func observe(_ client: HTTPClient) {
        var made: [Token] = []
        for name in [Notification.Name.courierUserDidLogIn, .courierUserDidLogOut] {
            // Weak: the center must not keep the client alive; deinit removes the observers.
            // `object: nil`: `handle` checks the sender against the client's `SessionScope`.
            let token = center.addObserver(forName: name, object: nil, queue: nil) { [weak client] notification in
                client?.handle(notification)
            }
            made.append(Token(value: token))
        }
        tokens.withLock { $0 = made }
    }

    func removeAll() {
        let all = tokens.withLock { tokens in
            defer { tokens.removeAll() }
            return tokens
        }
        for token in all { center.removeObserver(token.value) }
    }
}
