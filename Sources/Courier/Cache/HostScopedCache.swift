import Foundation
import HTTPTypes
import Synchronization

/// A private HTTP cache (RFC 9111) for chosen hosts: a bounded memory tier over a bounded,
/// crash-safe SQLite tier, with entries scoped to the identity whose credentials fetched them.
///
/// ```swift
/// let cache = try HostScopedCache(configuration: .init(rules: [
///     CacheRule("api.example.com", .followHTTP),
///     CacheRule(".cdn.example.com", .forceLifetime(.seconds(365 * 86_400))),
///     CacheRule("pay.example.com", .never),
/// ]))
/// let client = try HTTPClient(configuration: .init(baseURL: apiURL, cache: cache))
/// let response = try await client.send(request, options: .init(cacheLifetime: .seconds(180)))
/// print(response.isFromCache)
/// ```
///
/// `HTTPClient.send` runs every call through `load(_:send:)`: `lookup` before sending,
/// `store` / `merge304` / `staleFallback` after, and `invalidate(after:response:)` for unsafe
/// methods; those are public for other pipelines. Every method is synchronous (except `load`)
/// and thread-safe; memory hits take a lock and do no SQLite work. Several processes may share
/// a folder (SQLite locks it), but each keeps its own memory tier.
public final class HostScopedCache: Sendable {
    /// How a cache is set up.
    public struct Configuration: Sendable {
        /// Where entries persist.
        public enum Storage: Sendable, Hashable {
            /// Memory only; nothing survives the process.
            case memoryOnly
            /// A SQLite database in `directory` (nil: `$XDG_CACHE_HOME/courier` when that is an
            /// absolute path, else `~/.cache/courier`).
            case disk(directory: String?)
        }

        /// Host rules; an exact host beats a suffix, a longer suffix beats a shorter one.
        var rules: [CacheRule]
        /// The policy for hosts no rule matches.
        var defaultPolicy: CacheRule.Policy
        /// Memory only, or a folder for the SQLite tier.
        var storage: Storage
        /// Bytes the memory tier may hold.
        var memoryCapacityBytes: Int
        /// URLs (primary keys) the memory tier may hold.
        var memoryCapacityEntries: Int
        /// Bytes the disk tier may hold.
        var diskCapacityBytes: Int
        /// Larger bodies are not stored.
        var maxEntryBytes: Int
        /// Serve stale entries when the network fails or answers 5xx (per-call overridable).
        var staleIfError: Bool
        /// The time source.
        var clock: CacheClock
        /// Receives every `CacheEvent`; called outside the cache's locks.
        var onEvent: (@Sendable (CacheEvent) -> Void)?
        /// A tier shared with other processes (fleet mode, CourierRedis), behind the memory
        /// tier; memory-only storage then, keyed with the tier's fleet-wide secret.
        package var sharedTier: (any SharedCacheTier)?

        /// Creates a configuration.
        /// - Parameters:
        ///   - rules: Host rules.
        ///   - defaultPolicy: The policy for hosts no rule matches (never, unless set).
        ///   - storage: Memory only, or a folder for the disk tier; by default the disk tier in
        ///     `$XDG_CACHE_HOME/courier` (else `~/.cache/courier`), which every cache made
        ///     without a folder shares.
        ///   - memoryCapacityBytes: Bytes the memory tier may hold.
        ///   - memoryCapacityEntries: URLs (primary keys) the memory tier may hold.
        ///   - diskCapacityBytes: Bytes the disk tier may hold.
        ///   - maxEntryBytes: Larger bodies are not stored.
        ///   - staleIfError: Serve stale entries when the network fails or answers 5xx
        ///     (per-call overridable).
        ///   - onEvent: Receives every ``CacheEvent``; called outside the cache's locks.
        public init(
            rules: [CacheRule], defaultPolicy: CacheRule.Policy = .never, storage: Storage = .disk(directory: nil),
            memoryCapacityBytes: Int = 16 << 20, memoryCapacityEntries: Int = 1_000, diskCapacityBytes: Int = 256 << 20,
            maxEntryBytes: Int = 8 << 20, staleIfError: Bool = false, onEvent: (@Sendable (CacheEvent) -> Void)? = nil
        ) {
            self.init(
                rules: rules, defaultPolicy: defaultPolicy, storage: storage, memoryCapacityBytes: memoryCapacityBytes,
                memoryCapacityEntries: memoryCapacityEntries, diskCapacityBytes: diskCapacityBytes,
                maxEntryBytes: maxEntryBytes, staleIfError: staleIfError, clock: .system, onEvent: onEvent)
        }

        /// The same with an injected clock (tests).
        init(
            rules: [CacheRule], defaultPolicy: CacheRule.Policy = .never, storage: Storage = .disk(directory: nil),
            memoryCapacityBytes: Int = 16 << 20, memoryCapacityEntries: Int = 1_000, diskCapacityBytes: Int = 256 << 20,
            maxEntryBytes: Int = 8 << 20, staleIfError: Bool = false, clock: CacheClock,
            onEvent: (@Sendable (CacheEvent) -> Void)? = nil
        ) {
            self.rules = rules
            self.defaultPolicy = defaultPolicy
            self.storage = storage
            self.memoryCapacityBytes = memoryCapacityBytes
            self.memoryCapacityEntries = memoryCapacityEntries
            self.diskCapacityBytes = diskCapacityBytes
            self.maxEntryBytes = maxEntryBytes
            self.staleIfError = staleIfError
            self.clock = clock
            self.onEvent = onEvent
        }

        /// `$XDG_CACHE_HOME/courier` when set to an absolute path, else `~/.cache/courier`.
        static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment)
            -> String
        {
            if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return xdg + "/courier" }
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            return home + "/.cache/courier"
        }
    }

    struct MemoryState {
        var tier: MemoryCacheTier
        var statistics = CacheStatistics()
        /// Keys served from memory whose disk recency is written with the next store.
        var touched: Set<String> = []
    }

    let configuration: Configuration
    let memory: LockedValue<MemoryState>
    let disk: LockedValue<DiskCacheTier?>
    let hasDisk: Bool
    /// The key of the keyed credential digests: in memory for a memory-only cache, in its own
    /// file beside the database for a disk cache (see `CacheSecret`).
    let secret: CacheSecret
    /// Recent credential → stored identity, so a hit does not hash the token every time.
    /// In memory only; bounded.
    let identities = LockedValue<[String: StoredIdentity]>([:])
    /// Receivers added with `addObserver`.
    let observers = LockedValue<(next: UInt64, handlers: [UInt64: @Sendable (CacheEvent) -> Void])>((0, [:]))

    /// Creates a cache, opening (or creating) its disk tier.
    /// - Parameter configuration: Rules, bounds, storage folder, clock and event handler.
    /// - Throws: `CourierError.configuration` when a rule's pattern is no host name (a URL, a
    ///   port, a wildcard), or when the disk folder or database cannot be used.
    public init(configuration: Configuration) throws(CourierError) {
        for rule in configuration.rules { try rule.validate() }
        self.configuration = configuration
        memory = LockedValue(
            MemoryState(
                tier: MemoryCacheTier(
                    maxBytes: configuration.memoryCapacityBytes, maxEntries: configuration.memoryCapacityEntries)))
        if let shared = configuration.sharedTier {
            // The keyed identities must be the same in every process of the fleet, and a disk
            // tier keeps its own key: fleet mode is memory in front of the shared tier.
            guard configuration.storage == .memoryOnly else {
                throw CourierError(.configuration, "a cache with a shared tier keeps only a memory tier locally")
            }
            guard shared.identitySecret.count >= CacheSecret.byteCount else {
                throw CourierError(
                    .configuration, "the shared tier's identity key must have at least \(CacheSecret.byteCount) bytes")
            }
        }
        switch configuration.storage {
        case .memoryOnly:
            disk = LockedValue(nil)
            hasDisk = false
            secret = configuration.sharedTier.map { CacheSecret(bytes: $0.identitySecret) } ?? .random()
        case .disk(let directory):
            let folder = directory ?? Configuration.defaultDirectory()
            let tier = try DiskCacheTier(directory: folder, maxBytes: configuration.diskCapacityBytes)
            let loaded = try CacheSecret.load(directory: folder)
            secret = loaded.secret
            // Entries stored under a lost key belong to identities nobody can name any more:
            // they could never be served or purged by identity, so they go now.
            let orphaned = loaded.replacedBecause == nil ? 0 : ((try? tier.deleteAllIdentified()) ?? 0)
            let recreatedBecause = tier.recreatedBecause
            disk = LockedValue(tier)
            hasDisk = true
            if let recreatedBecause {
                emit([.diskUnavailable(reason: "damaged database recreated empty: " + recreatedBecause)])
            }
            if orphaned > 0 { emit([.purged(count: orphaned)]) }
        }
    }

    deinit {
        disk.withLock { tier in try? tier?.flush() }
    }

    /// The counters so far.
    public var statistics: CacheStatistics { memory.withLock { $0.statistics } }

    /// The policy that applies to `host` and whether a rule named it explicitly.
    func rulePolicy(forHost host: String) -> (policy: CacheRule.Policy, explicit: Bool) {
        var best: CacheRule?
        for rule in configuration.rules where rule.matches(host) {
            if rule.pattern.utf8.first != UInt8(ascii: ".") { return (rule.policy, true) }
            if best == nil || rule.pattern.utf8.count > best!.pattern.utf8.count { best = rule }
        }
        if let best { return (best.policy, true) }
        return (configuration.defaultPolicy, false)
    }

    /// The lifetime override for `request`, or nil to follow the headers; nil overall when the
    /// request must bypass the cache (not GET, or the host is never cached).
    func plan(for request: CacheRequest) -> Plan? {
        guard request.request.method == .get else { return nil }
        let (policy, explicit) = rulePolicy(forHost: request.host)
        if let lifetime = request.lifetime {
            if case .never = policy, explicit { return nil }
            return Plan(forcedLifetime: lifetime.timeInterval)
        }
        switch policy {
        case .never: return nil
        case .followHTTP: return Plan(forcedLifetime: nil)
        case .forceLifetime(let duration): return Plan(forcedLifetime: duration.timeInterval)
        }
    }

    /// How a cacheable request is handled: with a forced lifetime, or by the headers.
    struct Plan {
        var forcedLifetime: TimeInterval?
    }

    /// The identity `request` belongs to, as this cache stores it; memoized for recent credentials.
    func identity(of request: CacheRequest) -> StoredIdentity {
        if let known = request.storedIdentity { return known }
        if let identity = request.identity { return stored(identity) }
        let fields = request.request.headerFields
        let names = request.credentialNames
        var memoKey = ""
        for field in fields where names.contains(field.name) {
            memoKey += field.name.canonicalName + ":" + field.value + "\u{0}"
        }
        guard !memoKey.isEmpty else { return .anonymous }
        if let known = identities.withLock({ $0[memoKey] }) { return known }
        let identity = CacheIdentity(credentialsIn: fields, names: names).stored(with: secret)
        remember(identity, as: memoKey)
        return identity
    }

    /// `identity` keyed with this cache's secret, memoized.
    func stored(_ identity: CacheIdentity) -> StoredIdentity {
        guard !identity.isAnonymous else { return .anonymous }
        let memoKey = "=" + identity.components.joined(separator: ";")
        if let known = identities.withLock({ $0[memoKey] }) { return known }
        let stored = identity.stored(with: secret)
        remember(stored, as: memoKey)
        return stored
    }

    private func remember(_ identity: StoredIdentity, as memoKey: String) {
        identities.withLock { memo in
            if memo.count >= 64 { memo.removeAll(keepingCapacity: true) }
            memo[memoKey] = identity
        }
    }

    static func sameVaryNames(_ a: CacheEntry, _ b: CacheEntry) -> Bool { a.varyNames == b.varyNames }

    static func key(identity: StoredIdentity, url: String) -> String { identity.digest + " " + url }

    /// The secondary key of `request` for the `Vary` names `names`, credentials keyed.
    func variant(names: [HTTPField.Name], request: CacheRequest) -> String {
        CacheVariant.make(names: names, request: request.request.headerFields) { name, value in
            guard request.credentialNames.contains(name) else { return nil }
            return "hmac:" + secret.hex("v\u{0}" + name.canonicalName + "\u{0}" + value)
        }
    }

    func emit(_ events: [CacheEvent]) {
        let observers = observers.withLock { Array($0.handlers.values) }
        guard configuration.onEvent != nil || !observers.isEmpty else { return }
        for event in events {
            let redacted = event.redactingQuery
            configuration.onEvent?(redacted)
            for observer in observers { observer(redacted) }
        }
    }

    /// Adds a receiver of every `CacheEvent` (URL queries redacted), besides the configuration's
    /// `onEvent`. Event monitors of the services on this cache's client are added this way.
    /// - Returns: a token; the receiver is removed when it is cancelled or released.
    public func addObserver(_ handler: @escaping @Sendable (CacheEvent) -> Void) -> CacheObservation {
        let id = observers.withLock { registry in
            registry.next += 1
            registry.handlers[registry.next] = handler
            return registry.next
        }
        return CacheObservation { [weak self] in
            self?.observers.withLock { _ = $0.handlers.removeValue(forKey: id) }
        }
    }

    /// The variants stored under `key`: from memory, else from disk (then kept in memory).
    func variants(for key: String) -> [CacheEntry] {
        let fromMemory = memory.withLock { state -> [CacheEntry]? in
            guard let variants = state.tier.variants(for: key) else { return nil }
            if hasDisk, state.touched.count < 4_096 { state.touched.insert(key) }
            return variants
        }
        if let fromMemory { return fromMemory }
        guard hasDisk else { return [] }
        var events: [CacheEvent] = []
        let loaded = disk.withLock { tier -> [CacheEntry] in
            guard let tier else { return [] }
            let rows: [DiskCacheTier.Row]
            var corrupt = 0
            do {
                (rows, corrupt) = try tier.variants(for: key)
            } catch {
                if SQLiteConnection.isCorruption(error) { try? tier.reset() }
                events.append(.diskUnavailable(reason: Self.reason(error)))
                return []
            }
            let entries = rows.map(\.entry)
            memory.withLock { state in
                let evicted = entries.isEmpty ? 0 : state.tier.set(entries, for: key)
                state.statistics.evictions += evicted
                state.statistics.corruptEntriesDropped += corrupt
                if evicted > 0 { events.append(.evicted(count: evicted, fromDisk: false)) }
            }
            events += Array(repeating: CacheEvent.corruptEntryDropped, count: corrupt)
            return entries
        }
        emit(events)
        return loaded
    }

    /// Writes `entry` to disk (when there is a disk tier) and memory, replacing the same variant.
    /// When the disk refuses it (full, read-only, damaged), it is kept in memory only and a
    /// `.diskUnavailable` event says why.
    /// - Returns: Whether it was written.
    ///
    /// `isCurrent` is asked under the disk lock, which purges hold too: a logout either sees
    /// the entry written and purges it, or the write sees the logout and does nothing.
    @discardableResult
    func write(_ entry: CacheEntry, if isCurrent: (@Sendable () -> Bool)? = nil) -> Bool {
        var events: [CacheEvent] = []
        guard hasDisk else {
            let written = disk.withLock { _ -> Bool in
                guard isCurrent?() ?? true else { return false }
                writeToMemory(entry, events: &events)
                return true
            }
            emit(events)
            return written
        }
        let written = disk.withLock { tier -> Bool in
            guard let tier, isCurrent?() ?? true else { return false }
            let touched = memory.withLock { state in
                defer { state.touched = [] }
                return state.touched
            }
            for key in touched { tier.touch(key) }
            let evictedKeys: [String]
            let otherVariants: Int
            do {
                (evictedKeys, otherVariants) = try tier.store(entry)
            } catch {
                if SQLiteConnection.isCorruption(error) {
                    try? tier.reset()
                } else {
                    // The older row must not come back once memory lets the new entry go.
                    _ = try? tier.deleteAll(where: "key", equals: entry.key)
                }
                events.append(.diskUnavailable(reason: Self.reason(error)))
                writeToMemory(entry, events: &events)
                return true
            }
            // Other variants live on disk but not in memory: load them so memory holds them all.
            let inMemory = memory.withLock { $0.tier.contains(entry.key) }
            let reloaded = !inMemory && otherVariants > 0 ? try? tier.variants(for: entry.key).rows : nil
            memory.withLock { state in
                var variants = reloaded?.map(\.entry) ?? state.tier.variants(for: entry.key) ?? []
                variants.removeAll { $0.variant == entry.variant || !Self.sameVaryNames($0, entry) }
                variants.append(entry)
                var evicted = state.tier.set(variants, for: entry.key)
                for key in Set(evictedKeys) where key != entry.key { state.tier.remove(key) }
                if !evictedKeys.isEmpty { events.append(.evicted(count: evictedKeys.count, fromDisk: true)) }
                if evicted > 0 { events.append(.evicted(count: evicted, fromDisk: false)) }
                evicted += evictedKeys.count
                state.statistics.evictions += evicted
            }
            return true
        }
        emit(events)
        return written
    }

    /// What a disk failure says, for `.diskUnavailable`.
    static func reason(_ error: any Error) -> String {
        (error as? CourierError)?.message ?? String(describing: type(of: error))
    }

    /// Puts `entry` in the memory tier beside the variants it does not replace.
    private func writeToMemory(_ entry: CacheEntry, events: inout [CacheEvent]) {
        memory.withLock { state in
            var variants = state.tier.variants(for: entry.key) ?? []
            variants.removeAll { $0.variant == entry.variant || !Self.sameVaryNames($0, entry) }
            variants.append(entry)
            let evicted = state.tier.set(variants, for: entry.key)
            state.statistics.evictions += evicted
            if evicted > 0 { events.append(.evicted(count: evicted, fromDisk: false)) }
        }
    }
}

/// Keeps a cache observer registered; cancelling or releasing it removes the observer.
public final class CacheObservation: Sendable {
    private let remove: LockedValue<(@Sendable () -> Void)?>

    init(remove: @escaping @Sendable () -> Void) { self.remove = LockedValue(remove) }

    /// Removes the observer (idempotent).
    public func cancel() {
        let action = remove.withLock { value -> (@Sendable () -> Void)? in
            defer { value = nil }
            return value
        }
        action?()
    }

    deinit { cancel() }
}
