import Foundation
import HTTPTypes
import Logging
import Synchronization

extension Notification.Name {
    /// Post after a user logged in, with the credential (a token `String`) in `userInfo`
    /// under `CourierNotificationKey.credential`. Every client observing the center sends
    /// the auth header from the next request on.
    public static let courierUserDidLogIn = Notification.Name("CourierUserDidLogIn")
    /// Post after the user logged out. Clients stop sending the auth header.
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
    public let transport: any Transport
    /// The credential's fields and the origins that receive it (see `CredentialScope.swift`).
    let credentialScope: CredentialScope

    private struct State {
        var credential: String?
    }
    private let state = LockedValue(State())
    private let observers: ObserverTokens

    /// Makes a client.
    /// - Parameters:
    ///   - configuration: Base URL, timeouts, limits, TLS and auth settings.
    ///   - transport: The transport to use; `nil` makes a `CurlTransport` from `configuration`.
    /// - Throws: `CourierError.configuration` when the configuration cannot work.
    public init(configuration: Configuration = .init(), transport: (any Transport)? = nil) throws(CourierError) {
        guard configuration.maxResponseSize > 0 else {
            throw CourierError(.configuration, "the maximum response size must be positive")
        }
        for field in configuration.defaultHeaders { try RequestValidation.validate(field) }
        self.configuration = configuration
        credentialScope = try CredentialScope(configuration: configuration)
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
    /// - Throws: `CourierError.invalidRequest` when the credential contains CR, LF or NUL.
    public func logIn(credential: String) throws(CourierError) {
        guard !credential.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 }) else {
            throw CourierError(.invalidRequest, "the credential contains CR, LF or NUL")
        }
        state.withLock { $0.credential = credential }
        configuration.logger.debug("courier: logged in")
    }

    /// Stops sending the auth header, and drops the cached responses of the credential.
    public func logOut() {
        purgeCache(for: authorizationFields())
        state.withLock { $0.credential = nil }
        configuration.logger.debug("courier: logged out")
    }

    /// Whether a credential is set.
    public var isLoggedIn: Bool { state.withLock { $0.credential != nil } }

    /// The auth fields for a request starting now.
    func authorizationFields() -> [HTTPField] {
        guard let credential = state.withLock({ $0.credential }) else { return [] }
        return configuration.authorization.build(credential)
    }

    fileprivate func handle(_ notification: Notification) {
        if notification.name == .courierUserDidLogOut {
            logOut()
            return
        }
        guard let credential = notification.userInfo?[CourierNotificationKey.credential] as? String else {
            configuration.logger.warning("courier: login notification without a String credential; ignored")
            return
        }
        do {
            try logIn(credential: credential)
        } catch {
            configuration.logger.warning("courier: login notification ignored: \(error.message)")
        }
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
