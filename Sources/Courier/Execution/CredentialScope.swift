import Foundation
import HTTPTypes

/// Which header fields carry the client's credential, and which origins may receive it.
///
/// The credential is whatever the `authorization` builder makes (Authorization, or fields of
/// the user's own such as `X-Api-Key`), plus Cookie, Proxy-Authorization, the secret names
/// every log redacts (`Redaction.commonSecretHeaderNames`) and the configured
/// `sensitiveHeaderNames`. It goes only to the API's own origins: the base URL's and the
/// configured `credentialOrigins` (a service adds its failover servers). Every credential
/// field is dropped when a redirect changes the origin, and redacted in every log through
/// one `Redaction`.
struct CredentialScope: Sendable {
    /// The fields that carry a credential.
    let fieldNames: Set<HTTPField.Name>
    /// The API's own origins; empty when the client declares none (no base URL and no
    /// `credentialOrigins`): then, until `updateSettings` gives it a base URL, every request
    /// the caller addresses gets the credential.
    let origins: Set<Origin>
    /// What the client's logs redact: `Redaction.default` and `fieldNames`.
    let redaction: Redaction

    /// What the probe credential is, when the builder is asked which fields it makes.
    static let probe = "courier-credential-probe"

    /// - Throws: `CourierError.configuration` for a credential origin that is not an absolute
    ///   http or https URL.
    init(configuration: HTTPClient.Configuration) throws(CourierError) {
        // The names every log redacts as secrets (X-Api-Key, X-Auth-Token) are credentials too,
        // set per call or by the builder: redacted, dropped across origins, and the cache's and
        // the de-duplication's identity, or two users' keys would share one cached answer.
        let names = Self.fieldNames(of: configuration)
        fieldNames = names
        var origins: Set<Origin> = []
        for url in configuration.credentialOrigins {
            guard let origin = Origin(url), origin.scheme == "http" || origin.scheme == "https" else {
                throw CourierError(.configuration, "a credential origin must be an absolute http or https URL")
            }
            origins.insert(origin)
        }
        if let baseURL = configuration.baseURL, let origin = Origin(baseURL) { origins.insert(origin) }
        self.origins = origins
        redaction = Redaction.default.adding(names)
    }

    /// The fields that carry a credential for a client made with `configuration`.
    static func fieldNames(of configuration: HTTPClient.Configuration) -> Set<HTTPField.Name> {
        var names = RedirectHandler.credentialHeaders.union(Redaction.commonSecretHeaderNames)
            .union(configuration.sensitiveHeaderNames)
        // Which fields does the builder make? Ask it once, with a value that means nothing.
        for field in configuration.authorization.build(Self.probe) { names.insert(field.name) }
        return names
    }

    /// Whether the client adds its credential to `request`.
    /// - Parameters:
    ///   - request: the request as the caller gave it.
    ///   - decision: the caller's (a service's) decision, when it made one.
    ///   - baseOrigin: the origin of the client's base URL now (it may have changed since `init`).
    func admits(_ request: HTTPRequest, decision: Bool?, baseOrigin: Origin? = nil) -> Bool {
        if let decision { return decision }
        // Relative to the base URL: the API's own.
        guard let scheme = request.scheme, let authority = request.authority else { return true }
        // No origin of its own: neither declared when the client was made, nor a base URL now.
        guard !origins.isEmpty || baseOrigin != nil else { return true }
        guard let origin = Origin(scheme: scheme, authority: authority) else { return false }
        return origins.contains(origin) || origin == baseOrigin
    }
}

extension HTTPClient {
    /// The header fields that carry a credential: Authorization, Cookie, Proxy-Authorization,
    /// `Redaction.commonSecretHeaderNames`, `sensitiveHeaderNames` and the fields the
    /// `authorization` builder makes. Computed once.
    var credentialFieldNames: Set<HTTPField.Name> { credentialScope.fieldNames }
}

extension Origin {
    /// The origin of a scheme and an authority (`host:port`).
    init?(scheme: String, authority: String) {
        guard let url = URL(string: "\(scheme)://\(authority)/") else { return nil }
        self.init(url)
    }

    /// The origin of a server.
    init?(_ server: BaseURL) { self.init(scheme: server.scheme, authority: server.authority) }
}
