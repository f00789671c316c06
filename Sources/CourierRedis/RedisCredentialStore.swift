import Courier
import CourierLocking
import Crypto
import Foundation

extension RedisFleet {
    /// A refresh coordinator whose refreshes are single-flight across the fleet: when the
    /// token expires, one process refreshes it (a Redis lock with a lease, and a fencing
    /// generation), the others wait for it and read the new one; before every attempt each
    /// process checks the published generation, so none keeps sending a token the fleet has
    /// replaced. When Redis is unavailable each process refreshes on its own.
    ///
    /// The token is stored in Redis encrypted (ChaCha20-Poly1305 under a key derived from the
    /// identity key), bound to `name` and its generation.
    /// - Parameters:
    ///   - name: the credential's name in the fleet (one per API account).
    ///   - credential: the token to start with (nil: logged out).
    ///   - lease: how long the refreshing process holds the lock (at most about 31 years); others
    ///     wait at most twice this.
    ///   - stormLimit: the local limit on refreshes.
    ///   - refresh: gets a new token from the expired one; called by one process at a time.
    public func coordinator(
        name: String, credential: String? = nil, lease: Duration = .seconds(10),
        stormLimit: RefreshStormLimit = .default,
        refresh: @escaping @Sendable (_ expired: String) async throws -> String
    ) -> AuthRefreshCoordinator<String> {
        let store = RedisCredentialStore(fleet: self, name: name, lease: lease)
        let coordinator = AuthRefreshCoordinator<String>(credential: credential, stormLimit: stormLimit) { expired in
            try await store.refresh(expired: expired, using: refresh)
        }
        coordinator.sharedSync.withLock { sync in
            sync = { [weak coordinator] in
                guard let coordinator, let newer = await store.newer() else { return }
                coordinator.adopt(newer)
            }
        }
        return coordinator
    }
}

/// One credential in Redis: `c:<name>` = "<generation>:<sealed token>", `l:<name>` = the
/// refresh lock (owner token, with a lease), `g:<name>` = the fencing counter.
final class RedisCredentialStore: Sendable {
    let fleet: RedisFleet
    let name: String
    let lease: Duration
    private let sealKey: [UInt8]
    /// The newest generation this process has seen or published.
    private let seen = LockedValue<UInt64>(0)

    init(fleet: RedisFleet, name: String, lease: Duration) {
        self.fleet = fleet
        self.name = name
        // At most the longest wait, as in Redis (`redisMilliseconds`): twice a lease past about
        // 8.5 × 10¹⁹ seconds overflowed `Duration` and trapped.
        self.lease = lease.clamped(to: ConfigurationBounds.maximumWait)
        sealKey = Array(
            HMAC<SHA256>.authenticationCode(
                for: Data("courier-fleet-credential".utf8), using: SymmetricKey(data: fleet.configuration.identityKey)))
    }

    private var credentialKey: String { fleet.key("c", RedisFleet.digest(name)) }
    var lockKey: String { fleet.key("l", RedisFleet.digest(name)) }
    private var fenceKey: String { fleet.key("g", RedisFleet.digest(name)) }

    enum Read {
        case unavailable
        case absent
        case value(generation: UInt64, token: String)
    }

    /// The most bytes of a published credential (generation, nonce, token, tag): a token is far
    /// shorter. A longer value (a neighbour's, garbage) is not read whole before every attempt.
    static let maximumStoredBytes = 64 << 10

    /// The published credential.
    func read(client: RedisClient? = nil) async -> Read {
        // GETRANGE, not GET: a value past the limit is not one of ours (absent, so the next
        // refresh publishes over it), and only its first bytes cross the network.
        let reply = await (client ?? fleet.client).run([
            Data("GETRANGE".utf8), Data(credentialKey.utf8), Data("0".utf8),
            Data(String(Self.maximumStoredBytes).utf8),
        ])
        switch reply {
        case .success(.string(let data)):
            guard data.count <= Self.maximumStoredBytes, let (generation, token) = open(data) else { return .absent }
            return .value(generation: generation, token: token)
        case .success(.error(let message)) where message.hasPrefix("WRONGTYPE"):
            // Another type than a string (a neighbour's value): no credential, so the next
            // refresh publishes over it.
            return .absent
        default: return .unavailable
        }
    }

    /// A credential published after the newest this process has seen, if any.
    func newer() async -> String? {
        guard case .value(let generation, let token) = await read() else { return nil }
        let isNewer = seen.withLock { seen -> Bool in
            guard generation > seen else { return false }
            seen = generation
            return true
        }
        return isNewer ? token : nil
    }

    /// Single-flight refresh across the fleet.
    func refresh(expired: String, using refresher: @Sendable (String) async throws -> String) async throws -> String {
        var giveUp = ContinuousClock.now + lease * 2
        var pause = Duration.milliseconds(5)
        // A token this process got but could not publish: the lock had passed to another
        // holder. It is published under a later lock, or returned when the wait runs out; it
        // is never fetched twice.
        var unpublished: String?
        func obtain() async throws -> String {
            if let unpublished { return unpublished }
            return try await refresher(expired)
        }
        while true {
            switch await read(client: fleet.lockClient) {
            case .unavailable:
                return try await obtain()
            case .value(let generation, let token) where token != expired:
                note(generation)
                return token
            default:
                break
            }
            // Checked after the read, not before: a process starved past its wait (a loaded
            // machine) still takes a token published meanwhile rather than keep its own.
            if let unpublished, ContinuousClock.now >= giveUp { return unpublished }
            switch await acquire() {
            case .unavailable:
                return try await obtain()
            case .acquired(let owner, let fence):
                // Someone may have published between the read and the lock.
                if case .value(let generation, let token) = await read(client: fleet.lockClient), token != expired {
                    release(owner)
                    note(generation)
                    return token
                }
                let fresh: String
                do {
                    fresh = try await obtain()
                } catch {
                    release(owner)
                    throw error
                }
                // Too long to publish (it could not be read back): this process keeps it.
                guard let sealed = seal(fresh, generation: fence), sealed.count <= Self.maximumStoredBytes else {
                    release(owner)
                    return fresh
                }
                if await publish(sealed: sealed, fence: fence, owner: owner) {
                    note(fence)
                    return fresh
                }
                // Our lease ran out: a newer generation is published (the next read returns
                // it), or another holder has the lock and is about to publish. Wait for that
                // one as long as its lease, or ours twice over, allows.
                if unpublished == nil {
                    // From when the holder's lease is known: the wait is not used up by the
                    // command that asks for it.
                    let left = await remainingLease()
                    giveUp = ContinuousClock.now + max(lease * 2, left)
                }
                unpublished = fresh
                pause = .milliseconds(5)
            case .held:
                // The holder died or hangs past the lease twice over: refresh here.
                if ContinuousClock.now >= giveUp { return try await obtain() }
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .milliseconds(100))
            }
        }
    }

    /// How long the current holder's lock has left (zero when free or unknown).
    private func remainingLease() async -> Duration {
        let reply = await fleet.lockClient.run([Data("PTTL".utf8), Data(lockKey.utf8)])
        guard case .success(let value) = reply, let left = value.integer, left > 0 else { return .zero }
        return .milliseconds(left)
    }

    private func note(_ generation: UInt64) {
        seen.withLock { $0 = max($0, generation) }
    }

    enum Acquired {
        case acquired(owner: String, fence: UInt64)
        case held
        case unavailable
    }

    func acquire() async -> Acquired {
        let owner = UUID().uuidString
        let reply = await fleet.lockClient.eval(
            Self.acquireScript, keys: [lockKey, fenceKey, credentialKey],
            arguments: [Data(owner.utf8), Data(String(lease.redisMilliseconds).utf8)])
        guard case .success(let value) = reply, let fence = value.integer else { return .unavailable }
        return fence > 0 ? .acquired(owner: owner, fence: UInt64(fence)) : .held
    }

    /// Publishes a token sealed for generation `fence` (`seal`), if `owner` still holds the lock.
    func publish(sealed: Data, fence: UInt64, owner: String) async -> Bool {
        let reply = await fleet.lockClient.eval(
            Self.publishScript, keys: [credentialKey, lockKey],
            arguments: [Data(owner.utf8), Data(String(fence).utf8), sealed])
        return reply == .success(.integer(1))
    }

    private func release(_ owner: String) {
        fleet.lockClient.sendEval(RedisScripts.compareAndDelete, keys: [lockKey], arguments: [Data(owner.utf8)])
    }

    private func authenticatedData(_ generation: UInt64) -> Data { Data("\(name)\u{0}\(generation)".utf8) }

    func seal(_ token: String, generation: UInt64) -> Data? {
        guard
            let box = try? ChaChaPoly.seal(
                Data(token.utf8), using: SymmetricKey(data: sealKey), authenticating: authenticatedData(generation))
        else { return nil }
        return Data("\(generation):".utf8) + box.combined
    }

    private func open(_ data: Data) -> (UInt64, String)? {
        guard let colon = data.firstIndex(of: UInt8(ascii: ":")),
            let generation = UInt64(String(decoding: data[data.startIndex..<colon], as: UTF8.self)),
            let box = try? ChaChaPoly.SealedBox(combined: data[data.index(after: colon)...]),
            let plain = try? ChaChaPoly.open(
                box, using: SymmetricKey(data: sealKey), authenticating: authenticatedData(generation))
        else { return nil }
        return (generation, String(decoding: plain, as: UTF8.self))
    }

    /// KEYS: lock, fence counter, credential. ARGV: owner, lease ms. Returns the new fence, or 0
    /// when held. Every lock has its lease: a value without a time to live (a neighbour's on the
    /// same Redis) is not one, and is replaced. The fence is above the published generation: the
    /// counter, read only when a process refreshes, is the key an `allkeys-lru` Redis evicts
    /// while the credential (read before every attempt) stays, and a fence at or below it could
    /// never be published. Generations past 2^53 (not a number Lua holds exactly) are not
    /// followed. A counter or credential of another type than a string, or a counter that is
    /// not a whole number below 10^15, is a neighbour's value and deleted first (`INCR` would
    /// fail on it after the lock was taken).
    static let acquireScript =
        RedisScripts.clearOtherType + """
            if redis.call('PTTL', KEYS[1]) == -1 then redis.call('DEL', KEYS[1]) end
            for i = 2, 3 do clearOtherType(KEYS[i], 'string') end
            local counter = redis.call('GET', KEYS[2])
            if counter and not (#counter <= 15 and string.match(counter, '^%d+$')) then redis.call('DEL', KEYS[2]) end
            if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
              local fence = redis.call('INCR', KEYS[2])
              local current = redis.call('GET', KEYS[3])
              local generation = current and tonumber(string.match(current, '^(%d+):'))
              if generation and generation >= fence and generation < 9007199254740992 then
                fence = generation + 1
                redis.call('SET', KEYS[2], string.format('%d', fence))
              end
              return fence
            end
            return 0
            """

    /// KEYS: credential, lock. ARGV: owner, fence, value. Publishes only a newer generation,
    /// and only while the lock is ours or free (a value of another type is neither a credential
    /// nor a lock).
    static let publishScript = """
        local function text(key) return redis.call('TYPE', key).ok == 'string' and redis.call('GET', key) end
        local current = text(KEYS[1])
        if current then
          local generation = tonumber(string.match(current, '^(%d+):'))
          if generation and generation >= tonumber(ARGV[2]) then return 0 end
        end
        local holder = text(KEYS[2])
        if holder and holder ~= ARGV[1] then return 0 end
        redis.call('SET', KEYS[1], ARGV[3])
        if holder then redis.call('DEL', KEYS[2]) end
        return 1
        """
}
