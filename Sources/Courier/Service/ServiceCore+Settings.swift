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
            let committed = live.withLock { live in
                guard live.version == version else { return false }
                live = LiveServiceSettings(settings: changed, version: version &+ 1)
                return true
            }
            if committed { return }
        }
    }
}

/// A service's settings behind its lock, with a version so that updates commit only over
/// the values they read.
struct LiveServiceSettings: Sendable {
    var settings: ServiceCore.Settings
    var version: UInt64 = 0
}
