import HTTPTypes

extension ServiceCore {
    /// The part of a service's defaults that can change while it is in use.
    ///
    /// A call takes one snapshot when it starts and keeps it for all its attempts; calls that
    /// start after `updateSettings(_:)` see the new values. The starting values are the
    /// `ServiceConfiguration`'s (`headers`, `retryPolicy`; no timeout), which `configuration`
    /// keeps. The base URL lives on the client (`HTTPClient.updateSettings`) or in the
    /// service's `ServerPool` (`switchEnvironment(to:)`).
    public struct Settings: Sendable {
        /// Header fields for every call (a call's own headers win).
        public var headers: HTTPFields
        /// The retry policy of calls that name none.
        public var retryPolicy: RetryPolicy
        /// The timeout of each attempt of calls that name none (nil: the client's).
        public var timeout: Duration?

        init(_ configuration: ServiceConfiguration) {
            headers = configuration.headers
            retryPolicy = configuration.retryPolicy
            timeout = nil
        }
    }

    /// The settings new calls start with.
    public var settings: Settings { live.withLock { $0.settings } }

    /// Changes settings for the calls that start from now on; calls in flight keep the values
    /// they started with. Every change made by `change` lands at once, or none does.
    /// - Parameter change: edits a copy of the current settings; it may run more than once
    ///   when another thread changes them at the same time, so keep it free of side effects.
    /// - Throws: `CourierError.configuration` for a timeout of zero or less; `.invalidRequest`
    ///   for a header with CR, LF or NUL; whatever `change` throws. The settings are then
    ///   unchanged.
    public func updateSettings(_ change: (inout Settings) throws(CourierError) -> Void) throws(CourierError) {
        while true {
            let (read, version) = live.withLock { ($0.settings, $0.version) }
            var changed = read
            try change(&changed)
            changed.timeout = try ConfigurationBounds.timeout(changed.timeout, "service timeout")
            for field in changed.headers { try RequestValidation.validate(field) }
            let next = LiveServiceSettings(settings: changed, version: version &+ 1, acceptField: prepared.acceptField)
            let committed = live.withLock { live in
                guard live.version == version else { return false }
                live = next
                return true
            }
            if committed { return }
        }
    }
}

/// A service's settings behind its lock, with a version so that updates commit only over
/// the values they read. A reference: a call's snapshot is one reference count, not a copy
/// of each field.
final class LiveServiceSettings: Sendable {
    let settings: ServiceCore.Settings
    let version: UInt64
    /// `settings.headers` with the service format's `Accept` field when they set none: the
    /// fields of every call that adds none of its own, made once per change instead of copied
    /// and appended to by each call (`ServiceCore.prepare`).
    let headersWithAccept: HTTPFields

    init(settings: ServiceCore.Settings, version: UInt64 = 0, acceptField: HTTPField?) {
        self.settings = settings
        self.version = version
        var fields = settings.headers
        if let acceptField, fields[.accept] == nil { fields.append(acceptField) }
        headersWithAccept = fields
    }
}
