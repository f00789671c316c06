import Courier
import Crypto
import Foundation

/// Fleet mode: the cache, the credential refresh and the request intervals of many processes
/// shared through one Redis.
///
/// ```swift
/// let fleet = try RedisFleet(configuration: .init(
///     host: "redis.internal", port: 6379, identityKey: sharedKeyBytes, password: redisPassword))
/// let cache = try fleet.cache(.init(rules: [CacheRule("api.example.com", .followHTTP)], storage: .memoryOnly))
/// let tokens = fleet.coordinator(name: "api-token", credential: initialToken) { expired in
///     try await fetchNewToken()
/// }
/// ```
///
/// Every part falls back to the process's own tiers and gates when Redis is slow or down
/// (one connect or command timeout, then a circuit breaker that retries after `retryAfter`),
/// so a call never fails because Redis is unavailable. See Docs/FleetMode.md.
public final class RedisFleet: Sendable {
    /// Where Redis is and how long to wait for it.
    public struct Configuration: Sendable {
        /// The Redis server's host name or address.
        public var host: String
        /// The Redis server's TCP port (6379 by default).
        public var port: Int
        /// ACL user name (Redis 6+), with `password`.
        public var username: String?
        /// Sent with `AUTH` on every new connection; never logged.
        public var password: String?
        /// The logical database (`SELECT`).
        public var database: Int
        /// The prefix of every key, used as the cluster hash tag `{namespace}`, so that each
        /// script's keys are in one slot.
        public var namespace: String
        /// The key of the keyed credential digests and of the shared credential's encryption:
        /// at least 32 random bytes, the same in every process of the fleet, kept out of Redis.
        public var identityKey: [UInt8]
        /// The bound on connecting (a down Redis refuses at once; an unreachable one costs this).
        public var connectTimeout: Duration
        /// The bound on one command.
        public var commandTimeout: Duration
        /// After a failure, how long Redis is left alone before it is tried again.
        public var retryAfter: Duration
        /// How long the process fetching a missing cache entry holds its claim.
        public var fillLease: Duration
        /// How long a cache entry stays in Redis past its freshness, for revalidation.
        public var staleRetention: Duration

        /// Where Redis is; timeouts and the namespace keep their defaults.
        /// - Parameters:
        ///   - host: Redis's host name or address.
        ///   - port: Redis's port.
        ///   - identityKey: the fleet's shared secret (at least 32 bytes).
        ///   - password: the `AUTH` password, if any.
        public init(host: String = "127.0.0.1", port: Int = 6379, identityKey: [UInt8], password: String? = nil) {
            self.host = host
            self.port = port
            self.password = password
            self.database = 0
            self.namespace = "courier"
            self.identityKey = identityKey
            self.connectTimeout = .milliseconds(200)
            self.commandTimeout = .milliseconds(200)
            self.retryAfter = .seconds(1)
            self.fillLease = .seconds(5)
            self.staleRetention = .seconds(600)
        }
    }

    let configuration: Configuration
    let client: RedisClient
    /// Waits on locks and fill claims poll on their own connection, so they never queue
    /// behind (or in front of) the cache's reads.
    let lockClient: RedisClient

    /// Connects lazily: creating a fleet never blocks and never fails because Redis is down.
    /// - Throws: `CourierError.configuration` for a short identity key, a namespace with
    ///   braces or whitespace, or a timeout that is not positive (long ones are cut to 24 days).
    public init(configuration: Configuration) throws(CourierError) {
        guard configuration.identityKey.count >= 32 else {
            throw CourierError(.configuration, "the fleet's identity key must have at least 32 bytes")
        }
        guard !configuration.namespace.isEmpty,
            !configuration.namespace.contains(where: { $0 == "{" || $0 == "}" || $0.isWhitespace })
        else {
            throw CourierError(.configuration, "the fleet namespace must be non-empty, without braces or spaces")
        }
        guard (1...65_535).contains(configuration.port), !configuration.host.isEmpty else {
            throw CourierError(.configuration, "the Redis host or port is not valid")
        }
        // hiredis refuses a timeout past its milliseconds and times out at once on zero: either
        // would leave the fleet silently on its local tiers. The client's rule: zero or less is
        // refused, longer than 24 days is cut to 24 days.
        let connectTimeout = try ConfigurationBounds.timeout(configuration.connectTimeout, "fleet's connect timeout")
        let commandTimeout = try ConfigurationBounds.timeout(configuration.commandTimeout, "fleet's command timeout")
        self.configuration = configuration
        let endpoint = RedisConnection.Endpoint(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database,
            connectTimeout: connectTimeout ?? ConfigurationBounds.maximumTimeout,
            commandTimeout: commandTimeout ?? ConfigurationBounds.maximumTimeout)
        client = RedisClient(endpoint: endpoint, retryAfter: configuration.retryAfter, label: "data")
        lockClient = RedisClient(endpoint: endpoint, retryAfter: configuration.retryAfter, label: "locks")
    }

    /// A cache with a memory tier in front of Redis. `configuration.storage` must be
    /// `.memoryOnly`.
    /// - Throws: `CourierError.configuration` for disk storage.
    public func cache(_ configuration: HostScopedCache.Configuration) throws(CourierError) -> HostScopedCache {
        var configuration = configuration
        configuration.sharedTier = RedisCacheTier(fleet: self)
        return try HostScopedCache(configuration: configuration)
    }

    /// A request-interval gate enforced across the fleet (drop or delay as the call's
    /// `RequestInterval` says), falling back to its own table when Redis is unavailable.
    /// - Parameter capacity: the most endpoints its own table remembers
    ///   (`RequestIntervalGate.defaultCapacity`, which a default argument cannot name).
    public func intervalGate(capacity: Int = 16_384) -> RequestIntervalGate {
        intervalGate(capacity: capacity, clock: SystemServiceClock())
    }

    /// The same on another clock (tests).
    package func intervalGate(capacity: Int, clock: any ServiceClock) -> RequestIntervalGate {
        RequestIntervalGate(capacity: capacity, clock: clock, shared: RedisIntervalGate(fleet: self))
    }

    /// False while Redis is considered down (after a failure, for `retryAfter`).
    public var isAvailable: Bool { client.isAvailable && lockClient.isAvailable }

    /// Waits until the removals and purges queued so far have reached Redis (or failed).
    public func flush() async {
        await client.flush()
        await lockClient.flush()
    }

    /// A Redis key in this fleet's slot.
    func key(_ kind: String, _ name: String) -> String { "{" + configuration.namespace + "}:" + kind + ":" + name }

    /// Hex SHA-256 of `text`, for key names that must not show what they stand for.
    static func digest(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Hex HMAC-SHA256 of `text` under the identity key.
    func keyedDigest(_ text: String) -> String {
        HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: SymmetricKey(data: configuration.identityKey))
            .map { String(format: "%02x", $0) }.joined()
    }
}

extension RedisFleet.Configuration: CustomReflectable {
    /// Every setting; the password and the identity key redacted (a service that logs its
    /// settings at start must not log them).
    public var customMirror: Mirror {
        let redacted = "<redacted>"
        return Mirror(
            self,
            children: [
                "host": host, "port": port, "username": username as Any,
                "password": password.map { _ in redacted } as Any, "database": database, "namespace": namespace,
                "identityKey": redacted, "connectTimeout": connectTimeout, "commandTimeout": commandTimeout,
                "retryAfter": retryAfter, "fillLease": fillLease, "staleRetention": staleRetention,
            ], displayStyle: .struct)
    }
}
