import CourierLocking
import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier
@testable import CourierRedis

/// A value of another type than the fleet writes (a list, a hash, a word where a number
/// belongs), put under one of the fleet's keys by a neighbour on the same Redis. The fleet's
/// scripts failed on such a value with `WRONGTYPE` — some after writing half of what they
/// write — and the fleet stopped sharing that key for as long as the value stayed. They now
/// treat it as no value of theirs and write over it.
@Suite(.serialized) struct FleetWrongTypeTests {
    /// The fleet cache tests' clients and requests.
    let fleetCache = FleetCacheTests()
    func makeClient(_ server: TestServer, _ fleet: RedisFleet) throws -> HTTPClient {
        try fleetCache.makeClient(server, fleet)
    }
    func get(_ path: String) -> HTTPRequest { fleetCache.get(path) }

    /// The owner index of a logged-in user held a string. The store script wrote the entry,
    /// failed at that index, and the user's logout purge (which reads the index) failed too:
    /// on the old code the entry outlived the logout and another process of the same user was
    /// answered from it.
    @Test func aStringUnderAUsersOwnerIndexDoesNotKeepTheirEntryPastLogout() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let fleet = try redis.fleet()
        let client = try makeClient(server, fleet)
        try client.logIn(credential: "dana-token")
        // A first entry shows which owner indexes the user's entries go to.
        _ = try await client.send(get("/cache/etag?etag=first&max-age=60"))
        await fleet.flush()
        let owners = try keys(redis, matching: fleet.key("o", "*"))
        #expect(!owners.isEmpty)
        for owner in owners {
            _ = try redis.command("DEL", owner)
            _ = try redis.command("SET", owner, "a neighbour's value")
        }
        _ = try await client.send(get("/cache/etag?etag=second&max-age=60"))
        await fleet.flush()
        try await fleetCache.expectPurgedByLogout(
            client, fleet, redis, server, credential: "dana-token", path: "/cache/etag?etag=second&max-age=60",
            requests: 3)
    }

    /// A list under an entry's key: the read and the store both failed, so no process shared
    /// that URL for as long as the list stayed. Now the first store replaces it.
    @Test func aListUnderAnEntrysKeyIsReplacedByTheFirstStore() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let fleet = try redis.fleet()
        let cache = try fleet.cache(.init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let path = "/cache/etag?etag=listed&max-age=60"
        let key = cache.sharedKey(CacheRequest(HTTPRequest(method: .get, url: server.url(path))))
        _ = try redis.command("RPUSH", fleet.key("e", RedisFleet.digest(key)), "a", "b")
        let first = try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
        #expect(try await first.send(get(path)).isFromCache == false)
        await fleet.flush()
        let second = try makeClient(server, try redis.fleet())
        #expect(try await second.send(get(path)).isFromCache)
        #expect(server.requestCount == 1)
    }

    /// A hash under an endpoint's interval key: the script failed, each process fell back to
    /// its own table, and the interval no longer held across processes.
    @Test func aHashUnderAnIntervalKeyDoesNotLetTwoProcessesThrough() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let fleet = try redis.fleet()
        let key = "GET https://h.example/hashed"
        let name = fleet.key("i", fleet.keyedDigest(RequestIntervalGate.fleetKey(key)))
        _ = try redis.command("HSET", name, "a", "b")
        try await fleet.intervalGate().admit(key: key, rule: .drop(.seconds(60)))
        let error = await #expect(throws: CourierError.self) {
            try await redis.fleet().intervalGate().admit(key: key, rule: .drop(.seconds(60)))
        }
        #expect(error?.code == .throttled)
    }

    /// A word under the fence counter: the lock was taken, then `INCR` failed; the refresh went
    /// on alone while the lock stayed taken for its lease, and every other process waited for it
    /// and then refreshed alone as well. Now the counter is started again above the published
    /// generation, and the refresh is shared.
    @Test func aWordUnderTheFenceCounterDoesNotStopTheSharedRefresh() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let fleet = try redis.fleet(commandTimeout: .seconds(10))
        _ = try redis.command("SET", fleet.key("g", RedisFleet.digest("api")), "not-a-number")
        try await expectOneSharedRefresh(redis, fleet)
    }

    /// A set under the published credential's key: every read failed, so each process refreshed
    /// on its own and nothing was ever published.
    @Test func aSetUnderTheCredentialsKeyIsReplacedByThePublishedToken() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let fleet = try redis.fleet(commandTimeout: .seconds(10))
        _ = try redis.command("SADD", fleet.key("c", RedisFleet.digest("api")), "x")
        try await expectOneSharedRefresh(redis, fleet)
    }

    /// One process refreshes and publishes; another, asked to replace the same expired token,
    /// takes the published one without refreshing.
    func expectOneSharedRefresh(_ redis: RedisTestServer, _ fleet: RedisFleet) async throws {
        let refreshes = LockedValue(0)
        let first = fleet.coordinator(name: "api", credential: "t1") { _ in
            refreshes.withLock { $0 += 1 }
            return "t2"
        }
        #expect(try await first.credential(replacing: "t1") == "t2")
        let second = try redis.fleet(commandTimeout: .seconds(10)).coordinator(name: "api", credential: "t1") { _ in
            refreshes.withLock { $0 += 1 }
            return "t3"
        }
        #expect(try await second.credential(replacing: "t1") == "t2")
        #expect(refreshes.withLock { $0 } == 1)
        #expect(try redis.command("EXISTS", fleet.key("l", RedisFleet.digest("api"))) == .integer(0))
    }

    func keys(_ redis: RedisTestServer, matching pattern: String) throws -> [String] {
        guard case .array(let items) = try redis.command("KEYS", pattern) else { return [] }
        return items.compactMap { $0.data.map { String(decoding: $0, as: UTF8.self) } }
    }
}
