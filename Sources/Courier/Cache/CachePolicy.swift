import Foundation

/// The per-call cache policy, as `URLRequest.CachePolicy` users know it.
public enum CachePolicy: Sendable, Hashable {
    /// Follow the host's rule and the HTTP caching headers (the default).
    case useProtocolCachePolicy
    /// Go to the network; the response may still be stored.
    case reloadIgnoringCache
    /// Serve any stored response, fresh or stale; load only when there is none.
    case returnCacheDataElseLoad
    /// Serve any stored response, fresh or stale; never load. A miss is `CourierError.notCached`.
    case returnCacheDataDontLoad
    /// Always ask the server, conditionally when a stored response has validators.
    case reloadRevalidatingCache
}

/// The time source of a cache, injected so freshness tests need no sleeping.
struct CacheClock: Sendable {
    /// The current time.
    let now: @Sendable () -> Date

    /// Creates a clock from a closure returning the current time.
    init(now: @escaping @Sendable () -> Date) { self.now = now }

    /// The system wall clock.
    static let system = CacheClock(now: { Date() })
}
