import Courier
import Foundation

/// The shared cache tier in Redis.
///
/// Layout (all keys tagged `{namespace}`, so every script's keys share one cluster slot):
/// - `e:<sha256(primary key)>`: a hash, field `vary` (the `Vary` names) and one field per
///   variant holding the encoded entry; expires with its longest-lived variant (`PEXPIRE`).
/// - `u:<sha256(url)>`, `o:<identity component>`, `owned`, `all`: sorted sets of entry keys
///   scored by expiry (pruned on every store), for invalidation by URL, logout purge by
///   identity, and purges of everything.
/// - `f:<sha256(primary key)>`: the fill claim of the process fetching a missing entry.
/// The primary key holds the identity as keyed digests (HMAC with the fleet's identity key),
/// never a credential.
final class RedisCacheTier: SharedCacheTier {
    let fleet: RedisFleet

    init(fleet: RedisFleet) { self.fleet = fleet }

    var identitySecret: [UInt8] { fleet.configuration.identityKey }
    var fillLease: Duration { fleet.configuration.fillLease }
    var staleRetention: Duration { fleet.configuration.staleRetention }

    private func entryKey(_ key: String) -> String { fleet.key("e", RedisFleet.digest(key)) }
    private func fillKey(_ key: String) -> String { fleet.key("f", RedisFleet.digest(key)) }

    func variants(forKey key: String, maximumBytes: Int, totalBytes: Int) async -> (variants: [Data], filling: Bool)? {
        let reply = await fleet.client.eval(
            Self.readScript, keys: [entryKey(key), fillKey(key)],
            arguments: [Data(String(maximumBytes).utf8), Data(String(totalBytes).utf8)])
        guard case .success(.array(let items)) = reply, let filling = items.first?.integer else { return nil }
        return (items.dropFirst().compactMap(\.data), filling == 1)
    }

    func store(
        _ encoded: Data, key: String, variant: String, varyNames: String, url: String, owners: [String],
        timeToLive: Duration
    ) async {
        let entry = entryKey(key)
        var indexes = [fleet.key("u", RedisFleet.digest(url)), fleet.key("all", "entries")]
        if !owners.isEmpty {
            indexes.append(fleet.key("owned", "entries"))
            indexes += owners.map { fleet.key("o", $0) }
        }
        let milliseconds = timeToLive.redisMilliseconds
        _ = await fleet.client.eval(
            Self.storeScript, keys: [entry] + indexes,
            arguments: [Data(("v:" + variant).utf8), encoded, Data(varyNames.utf8), Data(String(milliseconds).utf8)])
    }

    func claimFill(key: String) async -> SharedFillClaim {
        // One token per call, not per process: two calls of this process may hold the claim in
        // turn (the first one's lease ran out while it fetched), and each releases its own.
        let token = UUID().uuidString
        let milliseconds = fleet.configuration.fillLease.redisMilliseconds
        let reply = await fleet.lockClient.run([
            Data("SET".utf8), Data(fillKey(key).utf8), Data(token.utf8), Data("NX".utf8), Data("PX".utf8),
            Data(String(milliseconds).utf8),
        ])
        switch reply {
        case .success(.status): return .claimed(token: token)
        case .success(.null): return .held
        default: return .unanswered  // Redis cannot answer: fetch it ourselves
        }
    }

    func releaseFill(key: String, token: String) {
        fleet.lockClient.sendEval(RedisScripts.compareAndDelete, keys: [fillKey(key)], arguments: [Data(token.utf8)])
    }

    func remove(key: String) {
        fleet.client.send([Data("DEL".utf8), Data(entryKey(key).utf8)], replayed: true)
    }

    func invalidate(url: String) {
        fleet.client.sendEval(
            Self.dropIndexScript, keys: [fleet.key("u", RedisFleet.digest(url))], arguments: [], replayed: true)
    }

    func purge(owners: [[String]]) {
        var seen = Set<[String]>()
        for identity in owners where !identity.isEmpty && seen.insert(identity).inserted {
            fleet.client.sendEval(
                Self.purgeScript, keys: identity.map { fleet.key("o", $0) }, arguments: [], replayed: true)
        }
    }

    func purgeAllIdentified() {
        fleet.client.sendEval(
            Self.dropIndexScript, keys: [fleet.key("owned", "entries")], arguments: [], replayed: true)
    }

    func removeAll() {
        fleet.client.sendEval(
            Self.dropIndexScript, keys: [fleet.key("all", "entries"), fleet.key("owned", "entries")], arguments: [],
            replayed: true)
    }

    /// KEYS: entry, fill claim. ARGV: the most bytes of a variant, of all variants. Returns
    /// {claimed?, variant…}. Every claim expires with its lease: a value without a time to live
    /// (a neighbour's on the same Redis) is not one. A variant past the limit (no entry this
    /// cache keeps; a neighbour's garbage), or past the total, stays in Redis rather than cross
    /// the network on every read.
    static let readScript = """
        local out = {redis.call('PTTL', KEYS[2]) > 0 and 1 or 0}
        if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return out end
        local limit, left = tonumber(ARGV[1]), tonumber(ARGV[2])
        for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
          local size = field ~= 'vary' and redis.call('HSTRLEN', KEYS[1], field) or left + 1
          if size <= limit and size <= left then
            out[#out + 1] = redis.call('HGET', KEYS[1], field)
            left = left - size
          end
        end
        return out
        """

    /// KEYS: entry, then index sets. ARGV: variant field, entry bytes, Vary names, TTL in ms.
    /// A key holding another type than this tier writes there (a neighbour's value) is no value
    /// of ours: it is replaced before anything is written, so the entry is never stored without
    /// its indexes (a logout purge reads them).
    static let storeScript =
        RedisScripts.clearOtherType + """
            for i = 1, #KEYS do clearOtherType(KEYS[i], i == 1 and 'hash' or 'zset') end
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local ttl = tonumber(ARGV[4])
            local expiry = now + ttl
            local vary = redis.call('HGET', KEYS[1], 'vary')
            if vary and vary ~= ARGV[3] then redis.call('DEL', KEYS[1]) end
            redis.call('HSET', KEYS[1], 'vary', ARGV[3], ARGV[1], ARGV[2])
            if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
            for i = 2, #KEYS do
              redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
              local score = redis.call('ZSCORE', KEYS[i], KEYS[1])
              if (not score) or tonumber(score) < expiry then redis.call('ZADD', KEYS[i], expiry, KEYS[1]) end
              if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
            end
            return 1
            """

    /// KEYS: index sets. Deletes every entry they list, then the sets (a key of another type
    /// lists nothing and is deleted too).
    static let dropIndexScript = """
        local dropped = 0
        for i = 1, #KEYS do
          if redis.call('TYPE', KEYS[i]).ok == 'zset' then
            local members = redis.call('ZRANGE', KEYS[i], 0, -1)
            for _, key in ipairs(members) do dropped = dropped + redis.call('DEL', key) end
          end
          redis.call('DEL', KEYS[i])
        end
        return dropped
        """

    /// KEYS: the owner sets of one identity's components. Deletes the entries stored with all
    /// of them (and possibly more credentials). A key of another type (a neighbour's value)
    /// cannot say whether an entry is the identity's: it counts as yes, since dropping a cache
    /// entry too many costs a fetch and keeping one past its user's logout does not.
    static let purgeScript = """
        local dropped = 0
        local sets, first = {}, nil
        for i = 1, #KEYS do
          sets[i] = redis.call('TYPE', KEYS[i]).ok == 'zset'
          if sets[i] and not first then first = i end
        end
        if not first then return 0 end
        for _, key in ipairs(redis.call('ZRANGE', KEYS[first], 0, -1)) do
          local all = true
          for i = first + 1, #KEYS do
            if sets[i] and not redis.call('ZSCORE', KEYS[i], key) then all = false break end
          end
          if all then
            dropped = dropped + redis.call('DEL', key)
            for i = 1, #KEYS do if sets[i] then redis.call('ZREM', KEYS[i], key) end end
          end
        end
        return dropped
        """
}

/// Scripts shared by the tiers.
enum RedisScripts {
    /// Lua, for the scripts that write a key: `clearOtherType(key, kind)` deletes the value under
    /// `key` when it is of another type than `kind` (a neighbour's value, no value of the
    /// fleet's), so the script's first write cannot fail on it half-way. A missing key is left
    /// alone. Scripts that call it start with it.
    static let clearOtherType = """
        local function clearOtherType(key, kind)
          local found = redis.call('TYPE', key).ok
          if found ~= 'none' and found ~= kind then redis.call('DEL', key) end
        end

        """

    /// KEYS: a lock. ARGV: the owner token. Deletes the lock only if the owner still holds it.
    static let compareAndDelete = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """
}

extension Duration {
    /// Whole milliseconds, at least 1 and at most the core's longest wait (about 31 years): a
    /// configured `.seconds(Int64.max)` (or `.min`) must not overflow the conversion.
    var redisMilliseconds: Int64 {
        let (seconds, attoseconds) = clamped(to: ConfigurationBounds.maximumWait).components
        return max(1, seconds * 1_000 + attoseconds / 1_000_000_000_000_000)
    }
}
