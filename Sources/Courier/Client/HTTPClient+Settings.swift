import Foundation
import HTTPTypes

extension HTTPClient {
    /// The part of the configuration that can change while the client is in use: where
    /// requests go, what they carry, how long they may take.
    ///
    /// A request takes one snapshot when it starts and keeps it for every hop, retry and
    /// redirect; requests that start after `updateSettings(_:)` see the new values. The
    /// starting values are the configuration's.
    public struct Settings: Sendable {
        /// Where requests without a scheme and authority go (switch environments here). Its
        /// origin receives the credential from the change on.
        public var baseURL: URL?
        /// Fields added to every request that does not set them itself; those that carry a
        /// credential (Authorization, Cookie, `sensitiveHeaderNames`, …) only to the API's own
        /// origins.
        public var defaultHeaders: HTTPFields
        /// The longest a request may take, redirects included (`nil`: no limit).
        public var timeout: Duration?
        /// The longest a connection may take to set up.
        public var connectTimeout: Duration
        /// Fail a transfer when no byte moved for this long (`nil`: never).
        public var stallTimeout: Duration?

        init(_ configuration: Configuration) {
            baseURL = configuration.baseURL
            defaultHeaders = configuration.defaultHeaders
            timeout = configuration.timeout
            connectTimeout = configuration.connectTimeout
            stallTimeout = configuration.stallTimeout
        }
    }

    /// The settings with what is derived from them, computed once per change.
    ///
    /// An immutable object: a request keeps its snapshot (and hands it from the service's
    /// call to the exchange) with one reference count, not a copy of every field.
    final class LiveSettings: Sendable {
        let settings: Settings
        /// Moves on at every change: `updateSettings` commits only over the values it read.
        let version: UInt64
        /// The base URL as a server, for services without a pool.
        let server: Result<BaseURL, CourierError>
        /// The base URL's origin: the API's own, it gets the credential.
        let origin: Origin?
        /// The default headers without the fields that carry a credential, for a request to
        /// another origin; nil when they carry none.
        let defaultHeadersWithoutCredential: HTTPFields?

        /// - Parameter credentialFieldNames: the client's credential fields (`CredentialScope`).
        init(_ settings: Settings, version: UInt64 = 0, credentialFieldNames: Set<HTTPField.Name>) {
            self.settings = settings
            self.version = version
            origin = settings.baseURL.flatMap(Origin.init)
            let defaults = settings.defaultHeaders
            defaultHeadersWithoutCredential =
                defaults.contains { credentialFieldNames.contains($0.name) }
                ? HTTPFields(defaults.filter { !credentialFieldNames.contains($0.name) }) : nil
            if let url = settings.baseURL {
                do {
                    server = .success(try BaseURL(url.absoluteString))
                } catch {
                    server = .failure(
                        error as? CourierError ?? CourierError(.configuration, "invalid base URL: \(error)"))
                }
            } else {
                server = .failure(
                    CourierError(.configuration, "the service has no server pool and the client has no base URL"))
            }
        }

        /// Throws when a base URL is set but cannot work (not an http or https URL with a host,
        /// with a query, with credentials): every call would fail on it, so the client and
        /// `updateSettings` refuse it where it is set. No base URL is not an error here.
        func refuseUnusableBaseURL() throws(CourierError) {
            if settings.baseURL != nil, case .failure(let error) = server { throw error }
        }
    }

    /// The settings new requests start with.
    public var settings: Settings { live.withLock { $0.settings } }

    /// The settings and what is derived from them, as one snapshot.
    var liveSettings: LiveSettings { live.withLock { $0 } }

    /// Changes settings for the requests that start from now on; requests in flight keep the
    /// values they started with. Every change made by `change` lands at once, or none does.
    ///
    /// ```swift
    /// try client.updateSettings {
    ///     $0.baseURL = URL(string: "https://staging.example.com/v1")
    ///     $0.defaultHeaders[.acceptLanguage] = "fr"
    /// }
    /// ```
    /// - Parameter change: edits a copy of the current settings; it may run more than once
    ///   when another thread changes the settings at the same time, so keep it free of side
    ///   effects.
    /// - Throws: `CourierError.configuration` for a timeout of zero or less, or a base URL
    ///   that is not an absolute http or https URL; `.invalidRequest` for a header with CR, LF
    ///   or NUL; whatever `change` throws. The settings are then unchanged.
    public func updateSettings(_ change: (inout Settings) throws(CourierError) -> Void) throws(CourierError) {
        while true {
            let (read, version) = live.withLock { ($0.settings, $0.version) }
            var changed = read
            try change(&changed)
            changed.timeout = try ConfigurationBounds.timeout(changed.timeout, "timeout")
            changed.connectTimeout =
                try ConfigurationBounds.timeout(changed.connectTimeout, "connect timeout") ?? changed.connectTimeout
            changed.stallTimeout = try ConfigurationBounds.timeout(changed.stallTimeout, "stall timeout")
            for field in changed.defaultHeaders { try RequestValidation.validate(field) }
            let next = LiveSettings(changed, version: version &+ 1, credentialFieldNames: credentialFieldNames)
            try next.refuseUnusableBaseURL()
            // Commit only over what `change` saw: a concurrent update is never lost.
            let committed = live.withLock { live in
                guard live.version == version else { return false }
                live = next
                return true
            }
            if committed { return }
        }
    }
}
