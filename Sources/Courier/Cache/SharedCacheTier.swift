import Crypto
import Foundation

/// A cache tier shared by the processes of a fleet (CourierRedis), behind each process's
/// memory tier.
///
/// The cache hands it entries already encoded and keyed: the primary key is the local one
/// (keyed identity digest + URL), the same in every process because the identity digests are
/// made with `identitySecret`, which every process of the fleet shares. Reads are `async`
/// (the store may be across the network); removals are queued and return at once. Every
/// method is best effort: when the store is slow or down the cache carries on with its local
/// tiers, and a read answers nil.
package protocol SharedCacheTier: Sendable {
    /// The key of the keyed credential digests, the same in every process of the fleet.
    var identitySecret: [UInt8] { get }
    /// How long a process may fetch a missing entry before the others stop waiting for it.
    var fillLease: Duration { get }
    /// How long an entry stays in the store past its freshness, for revalidation and
    /// stale-if-error.
    var staleRetention: Duration { get }
    /// The encoded variants stored under `key` of at most `maximumBytes` each and
    /// `totalBytes` together (the others are left in the store, unread), and whether another
    /// process is fetching it now (holds the fill claim); nil when the store cannot answer.
    func variants(forKey key: String, maximumBytes: Int, totalBytes: Int) async -> (variants: [Data], filling: Bool)?
    /// Stores one encoded variant; a variant with other `Vary` names replaces all the others.
    func store(
        _ encoded: Data, key: String, variant: String, varyNames: String, url: String, owners: [String],
        timeToLive: Duration
    ) async
    /// Claims fetching `key` for the fleet, for this call alone.
    /// - Returns: The claim's token, which only this call holds; `.held` when another call (of
    ///   this process or another) holds the claim; `.unanswered` (go ahead) when the store
    ///   cannot answer.
    func claimFill(key: String) async -> SharedFillClaim
    /// Gives back the claim made with `token`, and only it: once its lease ran out, another
    /// call may have claimed `key` again, and that claim stays.
    func releaseFill(key: String, token: String)
    /// Drops the variants of `key`.
    func remove(key: String)
    /// Drops every identity's entries for `url`.
    func invalidate(url: String)
    /// Drops the entries owned by each identity (given as its components; an entry belongs to
    /// an identity when it was stored with all of them).
    func purge(owners: [[String]])
    /// Drops every entry stored with credentials.
    func purgeAllIdentified()
    /// Drops every entry.
    func removeAll()
}

/// The answer to ``SharedCacheTier/claimFill(key:)``.
package enum SharedFillClaim: Sendable, Equatable {
    /// This call fetches the entry for the fleet; it gives the claim back with this token.
    case claimed(token: String)
    /// Another call is fetching it.
    case held
    /// The store did not answer: the call fetches it without a claim.
    case unanswered
}

/// The bytes of one entry in a shared tier: the disk tier's row (checksummed), length-prefixed.
enum SharedCacheCodec {
    private static let version: UInt8 = 1

    static func encode(_ entry: CacheEntry) -> Data {
        let head = CacheHeadCodec.encode(entry.response)
        let requestTime = entry.requestTime.timeIntervalSince1970
        let responseTime = entry.responseTime.timeIntervalSince1970
        let checksum = DiskCacheTier.checksum(
            key: entry.key, variant: entry.variant, head: head, body: entry.body, requestTime: requestTime,
            responseTime: responseTime, lifetime: entry.forcedLifetime)
        var out = Data([version])
        for part in [Data(entry.key.utf8), Data(entry.variant.utf8), Data(entry.url.utf8), Data(entry.identity.utf8)] {
            append(&out, part)
        }
        append(&out, head)
        append(&out, entry.body)
        for value in [requestTime, responseTime, entry.forcedLifetime ?? .nan] { append64(&out, value.bitPattern) }
        out.append(entry.hasQuery ? 1 : 0)
        append64(&out, checksum)
        return out
    }

    /// The entry, or nil when the bytes are damaged or from another version.
    static func decode(_ data: Data) -> CacheEntry? {
        let bytes = [UInt8](data)
        var offset = 0
        func take(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, count <= bytes.count - offset else { return nil }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }
        func u64() -> UInt64? {
            guard let raw = take(8) else { return nil }
            return raw.reduce(0) { $0 << 8 | UInt64($1) }
        }
        func part() -> Data? {
            guard let length = u64(), length <= UInt64(Int.max), let raw = take(Int(length)) else { return nil }
            return Data(raw)
        }
        guard take(1)?.first == version, let key = part(), let variant = part(), let url = part(),
            let identity = part(), let head = part(), let body = part(), let requestTime = u64(),
            let responseTime = u64(), let lifetime = u64(), let hasQuery = take(1)?.first, let checksum = u64(),
            offset == bytes.count
        else { return nil }
        let forced = Double(bitPattern: lifetime)
        let row = DiskCacheTier.StoredRow(
            key: String(decoding: key, as: UTF8.self), variant: String(decoding: variant, as: UTF8.self),
            url: String(decoding: url, as: UTF8.self), identity: String(decoding: identity, as: UTF8.self),
            head: head, body: body, requestTime: Double(bitPattern: requestTime),
            responseTime: Double(bitPattern: responseTime), lifetime: forced.isNaN ? nil : forced,
            hasQuery: hasQuery == 1, checksum: checksum)
        return row.decode()
    }

    /// The most bytes a stored entry of a cache whose bodies are at most `maxEntryBytes` can
    /// have: the body, and 1 MiB for the head (at most 256 KiB), key, URL, identity and code.
    /// A larger value in the store is not one of the fleet's entries (or not one this cache
    /// would keep), and is not read.
    static func maximumSealedBytes(maxEntryBytes: Int) -> Int {
        let (sum, overflow) = max(0, maxEntryBytes).addingReportingOverflow(1 << 20)
        return overflow ? Int.max : sum
    }

    /// The length of the code ``seal(_:secret:)`` appends.
    private static let codeLength = 32

    /// `encoded` followed by its HMAC-SHA256 under a key derived from the fleet's secret: what
    /// the shared tier stores. The checksum inside only catches damage: whoever can write to
    /// the store (another app on the same Redis) can make an entry with a valid one, under the
    /// key of any anonymous request; without the fleet's key it cannot make this code.
    static func seal(_ encoded: Data, secret: CacheSecret) -> Data {
        var out = encoded
        out.append(contentsOf: HMAC<SHA256>.authenticationCode(for: encoded, using: sealingKey(secret)))
        return out
    }

    /// The encoded entry in `sealed`, or nil when its code was not made with the fleet's secret
    /// (written by a process without it, damaged, or from a version that did not seal).
    static func open(_ sealed: Data, secret: CacheSecret) -> Data? {
        guard sealed.count > codeLength else { return nil }
        let encoded = sealed.prefix(sealed.count - codeLength)
        let code = sealed.suffix(codeLength)
        guard HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: encoded, using: sealingKey(secret)) else {
            return nil
        }
        return Data(encoded)
    }

    private static func sealingKey(_ secret: CacheSecret) -> SymmetricKey {
        secret.derivedKey(for: "courier-shared-cache-entry")
    }

    private static func append(_ out: inout Data, _ part: Data) {
        append64(&out, UInt64(part.count))
        out.append(part)
    }

    private static func append64(_ out: inout Data, _ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((value >> UInt64(shift)) & 0xff)) }
    }
}

extension HostScopedCache {
    /// The primary key of `request` and whether memory holds a fresh variant for it.
    func sharedKey(_ request: CacheRequest) -> String {
        Self.key(identity: identity(of: request), url: storedURL(of: request))
    }

    /// Whether the memory tier holds a variant for `request` fresh enough to serve now.
    func hasFreshInMemory(_ request: CacheRequest, key: String, plan: Plan) -> Bool {
        let now = configuration.clock.now()
        let held = memory.withLock { $0.tier.variants(for: key) } ?? []
        return held.contains { entry in
            entry.variant == variant(names: entry.varyNames, request: request)
                && entry.freshnessLifetime(override: plan.forcedLifetime) > entry.currentAge(now: now)
        }
    }

    /// Copies the shared tier's variants of `key` into memory, keeping the newer of two copies
    /// of a variant.
    /// - Returns: Whether another process is fetching `key` now; nil when the store did not answer.
    @discardableResult
    func pullShared(_ key: String, from shared: any SharedCacheTier) async -> Bool? {
        let limit = SharedCacheCodec.maximumSealedBytes(maxEntryBytes: configuration.maxEntryBytes)
        // No more than the memory tier can hold: many variants, each under the limit (a
        // neighbour's, or a `Vary` on a header with many values), are not read whole.
        let total = max(limit, configuration.memoryCapacityBytes)
        guard let (blobs, filling) = await shared.variants(forKey: key, maximumBytes: limit, totalBytes: total)
        else { return nil }
        // An entry sealed without the fleet's secret is not the fleet's: a miss.
        let entries = blobs.compactMap { SharedCacheCodec.open($0, secret: secret).flatMap(SharedCacheCodec.decode) }
            .filter { $0.key == key }
        guard !entries.isEmpty else { return filling }
        var events: [CacheEvent] = []
        memory.withLock { state in
            var newest: [String: CacheEntry] = [:]
            for entry in (state.tier.variants(for: key) ?? []) + entries {
                if let known = newest[entry.variant], known.responseTime >= entry.responseTime { continue }
                newest[entry.variant] = entry
            }
            guard let latest = newest.values.max(by: { $0.responseTime < $1.responseTime }) else { return }
            let kept = newest.values.filter { Self.sameVaryNames($0, latest) }
            let evicted = state.tier.set(Array(kept), for: key)
            state.statistics.evictions += evicted
            if evicted > 0 { events.append(.evicted(count: evicted, fromDisk: false)) }
        }
        emit(events)
        return filling
    }

    /// Before a lookup: when memory has nothing fresh for `request`, pulls the shared tier's
    /// copy; when nobody has it and another process is fetching it, waits (up to the fill
    /// lease) for that answer instead of asking the origin too.
    /// - Returns: The fill claim this call made (and must release), if any.
    func prepareShared(_ request: CacheRequest, _ shared: any SharedCacheTier) async -> (key: String, token: String)? {
        guard request.request.method == .get, request.policy != .reloadIgnoringCache,
            let plan = plan(for: request)
        else { return nil }
        let key = sharedKey(request)
        if hasFreshInMemory(request, key: key, plan: plan) { return nil }
        guard let filling = await pullShared(key, from: shared) else { return nil }
        if hasFreshInMemory(request, key: key, plan: plan) { return nil }
        guard request.policy == .useProtocolCachePolicy || request.policy == .returnCacheDataElseLoad else {
            return nil
        }
        if !filling {
            switch await shared.claimFill(key: key) {
            case .claimed(let token): return (key, token)
            case .unanswered: return nil
            case .held: break
            }
        }
        // Another process is fetching it: poll with a bounded back-off until its answer lands,
        // its claim ends, or the lease runs out.
        let deadline = ContinuousClock.now + shared.fillLease
        var pause = Duration.milliseconds(2)
        while ContinuousClock.now < deadline {
            // A cancelled call stops waiting (and is cancelled at the network step).
            do { try await Task.sleep(for: pause) } catch { return nil }
            guard let stillFilling = await pullShared(key, from: shared) else { return nil }
            if hasFreshInMemory(request, key: key, plan: plan) || !stillFilling { return nil }
            pause = min(pause * 2, .milliseconds(50))
        }
        return nil
    }

    /// After a store: writes `entry` to the shared tier, with a time to live of its remaining
    /// freshness plus the retention for revalidation. Undone when the session ended meanwhile.
    func pushShared(_ entry: CacheEntry, request: CacheRequest, _ shared: any SharedCacheTier) async {
        let now = configuration.clock.now()
        let remaining = max(0, entry.freshnessLifetime(override: nil) - entry.currentAge(now: now))
        let keepsForRevalidation =
            !entry.conditionalHeaders.isEmpty || (request.staleIfError ?? configuration.staleIfError)
        var timeToLive = Duration.milliseconds(Int64(min(remaining, 10 * 365 * 86_400) * 1_000))
        if keepsForRevalidation { timeToLive += shared.staleRetention }
        guard timeToLive >= .milliseconds(1) else { return }
        await shared.store(
            SharedCacheCodec.seal(SharedCacheCodec.encode(entry), secret: secret), key: entry.key,
            variant: entry.variant,
            varyNames: entry.varyNames.map(\.canonicalName).joined(separator: ","), url: entry.url,
            owners: entry.identity.split(separator: ";").map(String.init), timeToLive: timeToLive)
        // A logout between the local store and here purged before this write landed.
        if let isCurrent = request.isCurrent, !isCurrent() { shared.remove(key: entry.key) }
    }
}
