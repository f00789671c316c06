import Foundation

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

    init() {}
}

/// Something the cache did, reported to the configured event handler. URLs have their query
/// hidden (`?<redacted>`), as in Courier's logs.
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
    /// Entries of an identity were purged (logout); never reported for a purge that dropped none.
    case purged(count: Int)
    /// A corrupt disk row was found and deleted.
    case corruptEntryDropped
    /// The disk tier refused a read or a write (full, read-only, locked too long, damaged); a
    /// refused write is kept in memory only. The reason carries SQLite's message, never a key.
    case diskUnavailable(reason: String)
}

extension CacheEvent {
    /// The event with the query of its URL hidden: queries often carry tokens.
    var redactingQuery: CacheEvent {
        switch self {
        case .hit(let url, let stale): .hit(url: Self.redact(url), stale: stale)
        case .miss(let url): .miss(url: Self.redact(url))
        case .revalidate(let url): .revalidate(url: Self.redact(url))
        case .notModified(let url): .notModified(url: Self.redact(url))
        case .stored(let url, let bytes): .stored(url: Self.redact(url), bytes: bytes)
        case .staleServedOnError(let url): .staleServedOnError(url: Self.redact(url))
        case .invalidated(let url): .invalidated(url: Self.redact(url))
        case .evicted, .purged, .corruptEntryDropped, .diskUnavailable: self
        }
    }

    /// `url` with everything after `?` replaced by `<redacted>`.
    static func redact(_ url: String) -> String {
        guard let question = url.firstIndex(of: "?") else { return url }
        return url[..<question] + "?<redacted>"
    }
}
