import HTTPTypes

/// What `ServiceConfiguration.authentication` holds: an ``AuthenticationInterceptor`` of any
/// credential type — a token `String` (`.bearer(coordinator)`), or a credential of several
/// parts (`AuthenticationInterceptor(coordinator:parts:)`).
public protocol CredentialAuthentication: RequestAdapter, RequestRetrier {}

extension CredentialAuthentication where Self == AuthenticationInterceptor<String> {
    /// Sends the token as `Authorization: Bearer <token>`.
    /// - Parameter coordinator: refreshes the token.
    public static func bearer(_ coordinator: AuthRefreshCoordinator<String>) -> AuthenticationInterceptor<String> {
        AuthenticationInterceptor.makeBearer(coordinator)
    }
}

/// One value of a credential and where it goes: a header field or a query item.
///
/// A credential of several values (user id + token + device id; an access token with its
/// expiry) is one `Sendable & Equatable` value held by one `AuthRefreshCoordinator`, written by
/// its parts:
///
/// ```swift
/// struct Session: Sendable, Equatable { var userID, token, deviceID: String }
/// let interceptor = AuthenticationInterceptor(coordinator: sessions, parts: [
///     .header(.authorization) { "Bearer \($0.token)" },
///     .header(HTTPField.Name("X-User-Id")!) { $0.userID },
///     .query("device") { $0.deviceID },
/// ])
/// ```
///
/// Every attempt writes all parts from one snapshot of the coordinator's credential, and a
/// refresh replaces the whole value at once, so no request carries a mix of old and new parts.
/// The parts' names are known before any credential exists: every header part is a credential
/// field (redacted, dropped across origins, digested in the request and cache identities) and
/// every query part a secret query item (redacted in logs, digested in the identities and in
/// what the cache stores).
public struct CredentialPart<Credential: Sendable>: Sendable {
    enum Place: Sendable {
        case header(HTTPField.Name)
        case query(String)
    }
    let place: Place
    let value: @Sendable (Credential) -> String

    /// A part sent in the header field `name`.
    public static func header(_ name: HTTPField.Name, _ value: @escaping @Sendable (Credential) -> String) -> Self {
        CredentialPart(place: .header(name), value: value)
    }

    /// A part sent as the query item `name` (replacing one of that name).
    public static func query(_ name: String, _ value: @escaping @Sendable (Credential) -> String) -> Self {
        CredentialPart(place: .query(name), value: value)
    }
}

extension AuthenticationInterceptor {
    /// An interceptor that writes a credential of several parts.
    /// - Parameters:
    ///   - coordinator: holds and refreshes the whole credential.
    ///   - maximumAttempts: the most attempts a call gets (the first one included).
    ///   - requiresRefresh: which responses mean "credential rejected"; 401 by default (and an
    ///     `EnvelopeRule`'s refresh codes).
    ///   - isExpired: whether a credential must be refreshed before it is sent (a token pair
    ///     past its expiry: `{ $0.expiry <= Date() }`); nil refreshes only when it is rejected.
    ///   - parts: the credential's values and where each goes.
    public init(
        coordinator: AuthRefreshCoordinator<Credential>, maximumAttempts: Int = 3,
        requiresRefresh: @escaping @Sendable (HTTPResponse) -> Bool = { $0.status == .unauthorized },
        isExpired: (@Sendable (Credential) -> Bool)? = nil, parts: [CredentialPart<Credential>]
    ) {
        var headers: Set<HTTPField.Name> = []
        var queries: Set<String> = []
        for part in parts {
            switch part.place {
            case .header(let name): headers.insert(name)
            case .query(let name): queries.insert(name)
            }
        }
        self.init(
            coordinator: coordinator, maximumAttempts: maximumAttempts, requiresRefresh: requiresRefresh,
            fieldNames: headers, queryNames: queries, isExpired: isExpired
        ) { credential, request in
            for part in parts {
                let value = part.value(credential)
                switch part.place {
                case .header(let name): request.headerFields[name] = value
                case .query(let name): request.setQueryItem(name, value)
                }
            }
        }
    }
}

/// What Courier itself needs of a service's authentication: the names its parts use, the
/// current credential written into a request, login and logout.
protocol CredentialCarrying: Sendable {
    /// The header fields the credential is written into.
    var credentialFieldNames: Set<HTTPField.Name> { get }
    /// The query items the credential is written into.
    var credentialQueryNames: Set<String> { get }
    /// Writes the current credential into `request`, as an attempt would.
    func applyCurrent(to request: inout HTTPRequest)
    /// Logs in with `credential` when it is of the interceptor's type.
    func logIn(with credential: Any)
    /// Clears the credential.
    func logOut()
    /// Changes at each logout (`AuthRefreshCoordinator.sessionEpoch`).
    var sessionEpoch: UInt64 { get }
    /// Whether `credentialFieldNames` are all the fields it writes: known when the service is
    /// made (a `String` credential, probed; a credential of parts). False for a credential of
    /// another type, whose fields are read per attempt (`currentFieldNames()`).
    var knowsItsFields: Bool { get }
    /// The header fields and query items the current credential is written into (none when
    /// logged out).
    func currentNames() -> (fields: Set<HTTPField.Name>, queryItems: Set<String>)
}

extension AuthenticationInterceptor: CredentialAuthentication, CredentialCarrying {
    var credentialFieldNames: Set<HTTPField.Name> { probedFieldNames ?? [] }

    func logIn(with credential: Any) {
        if let credential = credential as? Credential { coordinator.login(credential) }
    }

    func logOut() { coordinator.logout() }

    var sessionEpoch: UInt64 { coordinator.sessionEpoch }

    var knowsItsFields: Bool { probedFieldNames != nil }
}

extension ServiceConfiguration {
    /// The authentication as Courier uses it (nil for a conformer of another type).
    var credentials: (any CredentialCarrying)? { authentication as? any CredentialCarrying }
}

extension HTTPRequest {
    /// Sets the query item `name` (percent-encoded), replacing every item of that name.
    mutating func setQueryItem(_ name: String, _ value: String) {
        let encodedName = RelativePath.percentEncode(name.utf8, allowed: RelativePath.unreserved)
        let item = encodedName + "=" + RelativePath.percentEncode(value.utf8, allowed: RelativePath.unreserved)
        let target = path ?? "/"
        guard let mark = target.firstIndex(of: "?") else {
            path = target + "?" + item
            return
        }
        var items = target[target.index(after: mark)...].split(separator: "&").filter { pair in
            RelativePath.percentDecoded(pair[..<(pair.firstIndex(of: "=") ?? pair.endIndex)]) != name
        }.map(String.init)
        items.append(item)
        path = target[..<mark] + "?" + items.joined(separator: "&")
    }

    /// The names of the query items, percent-decoded.
    var queryItemNames: Set<String> {
        guard let target = path, let mark = target.firstIndex(of: "?") else { return [] }
        return Set(
            target[target.index(after: mark)...].split(separator: "&").map { pair in
                RelativePath.percentDecoded(pair[..<(pair.firstIndex(of: "=") ?? pair.endIndex)])
            })
    }

    /// The values of the query items named in `names`, as `(name, value)` in order.
    func queryItems(named names: Set<String>) -> [(name: String, value: String)] {
        guard !names.isEmpty, let target = path, let mark = target.firstIndex(of: "?") else { return [] }
        return target[target.index(after: mark)...].split(separator: "&").compactMap { pair in
            let equals = pair.firstIndex(of: "=") ?? pair.endIndex
            let name = RelativePath.percentDecoded(pair[..<equals])
            guard names.contains(name) else { return nil }
            let value = equals == pair.endIndex ? "" : RelativePath.percentDecoded(pair[pair.index(after: equals)...])
            return (name, value)
        }
    }
}
