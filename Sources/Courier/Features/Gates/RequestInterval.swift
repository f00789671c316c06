import Crypto
import HTTPTypes
import Synchronization

/// The shortest time between two calls of the same request (a service keys them by their
/// `RequestIdentity`: method, URL without real-time parameters, credential, headers, body), and what
/// happens to a call that comes too early.
public struct RequestInterval: Sendable, Hashable {
    /// What to do with a call inside the interval.
    public enum Mode: Sendable, Hashable {
        /// Fail it at once with `CourierError.throttled`; nothing is sent.
        case drop
        /// Hold it until the interval has passed, then send it.
        case delay
    }

    /// The minimum time between two sends: from zero to about 31 years (clamped).
    var interval: Duration
    var mode: Mode

    /// At most one send per `interval` (clamped to about 31 years); `mode` says what happens to a
    /// call that comes too early.
    public init(_ interval: Duration, mode: Mode = .drop) {
        self.interval = interval.clamped(to: ConfigurationBounds.maximumWait)
        self.mode = mode
    }

    /// Drops calls that come sooner than `interval` after the previous one.
    public static func drop(_ interval: Duration) -> RequestInterval { RequestInterval(interval, mode: .drop) }
    /// Delays calls that come sooner than `interval` after the previous one.
    public static func delay(_ interval: Duration) -> RequestInterval { RequestInterval(interval, mode: .delay) }
}

/// The pure bookkeeping of request intervals: the last send time per endpoint, purged.
///
/// Bounded: past `capacity` endpoints whose interval has not passed, the one whose interval
/// ends first is forgotten (it may then go again that much early). Expired entries go first,
/// purged when the table has grown to twice what was left after the last purge (at least
/// `purgeThreshold`) and an entry's interval may have ended, so a table of mostly live entries
/// (a full one included) is not scanned on every call.
struct RequestIntervalTable: Sendable {
    enum Verdict: Equatable {
        case proceed
        case wait(Duration)
        case drop(remaining: Duration)
    }

    private struct Entry {
        var lastSent: ContinuousClock.Instant
        var interval: Duration
        /// When the interval ends: the entry no longer affects a call from then on.
        var expiry: ContinuousClock.Instant { lastSent + interval }
    }

    /// The size from which a table purges its expired entries.
    static let purgeThreshold = 1_024

    /// By the SHA-256 of the endpoint's key: a key is a whole request identity (its URL, its
    /// headers), and a table of 16,384 long ones held megabytes.
    private var entries: [SIMD4<UInt64>: Entry] = [:]
    /// The most entries remembered.
    let capacity: Int
    /// The size at which the next purge runs.
    private var purgeAt: Int
    /// No entry's interval ends before this (nil: no entry): a purge before it would remove
    /// nothing. A lower bound: the entry that set it may have been renewed or forgotten since.
    private var earliestExpiry: ContinuousClock.Instant?
    /// How many purges ran (tests).
    private(set) var purges = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        purgeAt = min(self.capacity, Self.purgeThreshold)
    }

    var count: Int { entries.count }

    /// Decides for a call to `key` and, unless it is dropped, books its send time (a delayed
    /// call books the future slot, so the calls behind it queue up after it).
    mutating func admit(key text: String, rule: RequestInterval, now: ContinuousClock.Instant) -> Verdict {
        let key = Self.digest(text)
        // Only when an entry may have expired: a full table of live entries (always at its
        // capacity) was scanned and copied whole on every call.
        if entries.count >= purgeAt, let earliestExpiry, earliestExpiry <= now { purge(now: now) }
        guard let entry = entries[key] else {
            book(key, at: now, rule)
            return .proceed
        }
        let allowed = entry.lastSent + rule.interval
        if allowed <= now {
            book(key, at: now, rule)
            return .proceed
        }
        switch rule.mode {
        case .drop:
            return .drop(remaining: allowed - now)
        case .delay:
            book(key, at: allowed, rule)
            return .wait(allowed - now)
        }
    }

    private mutating func book(_ key: SIMD4<UInt64>, at instant: ContinuousClock.Instant, _ rule: RequestInterval) {
        let entry = Entry(lastSent: instant, interval: rule.interval)
        entries[key] = entry
        noteExpiry(entry.expiry)
        if entries.count > capacity { evictFirstToExpire(sparing: key) }
    }

    /// Gives back the slot a delayed call booked at `slot` and will not use (it was cancelled),
    /// when no call has booked after it: the next call may go from the slot before it.
    mutating func release(key text: String, slot: ContinuousClock.Instant, interval: Duration) {
        let key = Self.digest(text)
        guard let entry = entries[key], entry.lastSent == slot else { return }
        entries[key]?.lastSent = slot - interval
        if let expiry = entries[key]?.expiry { noteExpiry(expiry) }
    }

    private mutating func noteExpiry(_ expiry: ContinuousClock.Instant) {
        earliestExpiry = Swift.min(earliestExpiry ?? expiry, expiry)
    }

    /// Removes every entry whose interval has passed: it can no longer affect a call.
    mutating func purge(now: ContinuousClock.Instant) {
        purges += 1
        entries = entries.filter { $0.value.expiry > now }
        earliestExpiry = entries.values.lazy.map(\.expiry).min()
        purgeAt = min(capacity, max(Self.purgeThreshold, entries.count * 2))
    }

    /// Forgets the entry whose interval ends first, other than `key`'s (just booked, and among
    /// equals it could be the one picked): the one that lets a call go early by the least
    /// time. (The one sent longest ago may hold the longest interval: forgotten, a second order
    /// went through while a thousand short intervals were kept.)
    private mutating func evictFirstToExpire(sparing key: SIMD4<UInt64>) {
        var first: (key: SIMD4<UInt64>, expiry: ContinuousClock.Instant)?
        for (candidate, entry) in entries where candidate != key {
            if let found = first, found.expiry <= entry.expiry { continue }
            first = (candidate, entry.expiry)
        }
        if let first { entries.removeValue(forKey: first.key) }
    }

    /// The SHA-256 of `key`, as four words (Crypto's digest type is not `Sendable`).
    private static func digest(_ key: String) -> SIMD4<UInt64> {
        SHA256.hash(data: Array(key.utf8)).withUnsafeBytes { bytes in
            SIMD4(
                bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        }
    }
}

/// Enforces request intervals per endpoint; shared by the calls of the services that hold it
/// (`ServiceConfiguration.intervalGate`). CourierRedis's `RedisFleet.intervalGate()` makes one
/// that enforces the intervals across processes.
public final class RequestIntervalGate: Sendable {
    private let table: LockedValue<RequestIntervalTable>
    private let clock: any ServiceClock
    /// Fleet mode: the table shared with other processes, asked first.
    private let shared: (any SharedIntervalGate)?

    /// The most endpoints a gate remembers by default: far more than one process calls within
    /// an interval; each takes about 100 bytes (its key is kept as a digest).
    package static let defaultCapacity = 16_384

    /// - Parameters:
    ///   - capacity: the most endpoints remembered; expired entries are purged first.
    ///   - clock: the time source.
    init(capacity: Int = RequestIntervalGate.defaultCapacity, clock: any ServiceClock = .system) {
        self.table = LockedValue(RequestIntervalTable(capacity: capacity))
        self.clock = clock
        self.shared = nil
    }

    /// A gate that asks `shared` first and falls back to its own table when it cannot answer.
    package init(
        capacity: Int = RequestIntervalGate.defaultCapacity, clock: any ServiceClock = .system,
        shared: any SharedIntervalGate
    ) {
        self.table = LockedValue(RequestIntervalTable(capacity: capacity))
        self.clock = clock
        self.shared = shared
    }

    /// The number of endpoints currently remembered.
    var trackedEndpoints: Int { table.withLock { $0.count } }

    /// The key of an endpoint: method and URL (query included).
    static func key(for request: HTTPRequest) -> String {
        "\(request.method.rawValue) \(request.scheme ?? "")://\(request.authority ?? "")\(request.path ?? "/")"
    }

    /// Waits until `rule` lets a call to `key` go, or refuses it.
    /// - Parameters:
    ///   - key: the endpoint, usually from `key(for:)`.
    ///   - rule: the interval and mode.
    ///   - clock: the time source; the gate's own when nil.
    /// - Throws: `CourierError.throttled` when the call is dropped; `CancellationError` when
    ///   the task is cancelled while delayed.
    func admit(key: String, rule: RequestInterval, clock: (any ServiceClock)? = nil) async throws {
        let clock = clock ?? self.clock
        let now = clock.now
        // `interval` is a `var`: bounded here too, as booked slots add up (ConfigurationBounds).
        var rule = rule
        rule.interval = rule.interval.clamped(to: ConfigurationBounds.maximumWait)
        var verdict = table.withLock { $0.admit(key: key, rule: rule, now: now) }
        // Fleet mode: the shared table decides while it answers; the local one stays booked
        // for when it does not.
        var fleetSlot: Int64?
        if let shared, let fleet = await shared.admit(key: key, interval: rule.interval, delay: rule.mode == .delay) {
            switch fleet {
            case .proceed: verdict = .proceed
            case .wait(let duration, let slot):
                verdict = .wait(duration)
                fleetSlot = slot
            case .drop(let remaining): verdict = .drop(remaining: remaining)
            }
        }
        switch verdict {
        case .proceed:
            return
        case .drop(let remaining):
            // The key may hold a query with secrets: the message names only the wait.
            throw CourierError(
                .throttled, "the endpoint was called again within its request interval; allowed again in \(remaining)")
        case .wait(let duration):
            do {
                try await clock.sleep(for: duration)
            } catch {
                // A cancelled call does not keep the calls after it waiting for its slot: the
                // fleet's when the fleet booked it, else the local table's.
                if let shared, let fleetSlot {
                    await shared.release(key: key, interval: rule.interval, slot: fleetSlot)
                } else {
                    table.withLock { $0.release(key: key, slot: now + duration, interval: rule.interval) }
                }
                throw error
            }
        }
    }
}
