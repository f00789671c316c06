import Foundation

/// Which hosts a `HostScopedCache` caches, and how.
///
/// A pattern starting with a dot matches that domain and every subdomain
/// (`.cdn.example.com` matches `cdn.example.com` and `img.cdn.example.com`); any other
/// pattern matches one host exactly. Matching ignores case and the port.
public struct CacheRule: Sendable, Hashable {
    /// What the cache does with a matching host's responses.
    public enum Policy: Sendable, Hashable {
        /// Follow HTTP caching headers (RFC 9111, private-cache rules).
        case followHTTP
        /// Keep every storable GET response for this long, whatever its caching headers say.
        case forceLifetime(Duration)
        /// Never store or serve cached responses.
        case never
    }

    /// The host, or a `.suffix` pattern.
    public var pattern: String
    /// The policy for matching hosts.
    public var policy: Policy

    /// Creates a rule.
    /// - Parameters:
    ///   - pattern: A host (`api.example.com`) or a suffix starting with a dot (`.cdn.example.com`).
    ///   - policy: What to do with matching hosts' responses.
    public init(_ pattern: String, _ policy: Policy) {
        self.pattern = pattern.lowercased()
        self.policy = policy
    }

    /// Whether the rule matches `host` (lowercased, without port).
    func matches(_ host: String) -> Bool {
        guard pattern.utf8.first == UInt8(ascii: ".") else { return host == pattern }
        var host = host
        var pattern = pattern
        return host.withUTF8 { hostBytes in
            pattern.withUTF8 { patternBytes in
                if hostBytes.count == patternBytes.count - 1 {
                    return hostBytes.elementsEqual(patternBytes.dropFirst())
                }
                return hostBytes.count > patternBytes.count
                    && hostBytes[(hostBytes.count - patternBytes.count)...].elementsEqual(patternBytes)
            }
        }
    }
}

extension CacheRule.Policy {
    var forcedLifetime: TimeInterval? {
        guard case .forceLifetime(let duration) = self else { return nil }
        return duration.timeInterval
    }
}

extension Duration {
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}

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
public struct CacheClock: Sendable {
    /// The current time.
    public let now: @Sendable () -> Date

    /// Creates a clock from a closure returning the current time.
    public init(now: @escaping @Sendable () -> Date) { self.now = now }

    /// The system wall clock.
    public static let system = CacheClock(now: { Date() })
}

/// Counters a cache keeps for monitors and tests.
public struct CacheStatistics: Sendable, Hashable {
    /// Lookups answered from the cache without the network (fresh, or stale by policy).
    public var hits = 0
    /// Lookups for cacheable requests that found nothing usable.
    public var misses = 0
    /// Lookups that sent a conditional request (`.stale`).
    public var revalidations = 0
    /// 304 responses merged into a stored entry.
    public var notModified = 0
    /// Responses written.
    public var stores = 0
    /// Entries evicted by the memory or disk bounds.
    public var evictions = 0
    /// Stale responses served because the network failed (stale-if-error).
    public var staleServedOnError = 0
    /// Disk rows that failed their checksum or could not be decoded, and were deleted.
    public var corruptEntriesDropped = 0

    public init() {}
}

/// Something the cache did, reported to the configured event handler.
public enum CacheEvent: Sendable, Hashable {
    /// A lookup was answered from the cache (`stale` when it was served past its freshness).
    case hit(url: String, stale: Bool)
    /// A lookup found nothing usable.
    case miss(url: String)
    /// A lookup asked for a conditional request.
    case revalidate(url: String)
    /// A 304 response refreshed a stored entry.
    case notModified(url: String)
    /// A response was stored.
    case stored(url: String, bytes: Int)
    /// A stale response was served because the network failed or answered 5xx.
    case staleServedOnError(url: String)
    /// Entries were evicted from a tier to respect its bounds.
    case evicted(count: Int, fromDisk: Bool)
    /// Entries of a URL were dropped after an unsafe request.
    case invalidated(url: String)
    /// Entries of an identity were purged (logout).
    case purged(count: Int)
    /// A corrupt disk row was found and deleted.
    case corruptEntryDropped
    /// The disk tier could not be used; the cache runs from memory only.
    case diskUnavailable(reason: String)
}
