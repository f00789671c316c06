import CourierLocking
import CourierTesting
import Foundation
import HTTPTypes
@_spi(Reflection) import Swift
import Testing

@_spi(Fuzzing) @testable import Courier
@testable import CourierRedis

/// The shared cache tier: several clients, each with its own memory tier and its own Redis
/// connection (as separate processes would have), sharing one real redis-server.
@Suite(.serialized) struct FleetCacheTests {
    func makeClient(_ server: TestServer, _ fleet: RedisFleet, staleIfError: Bool = false) throws -> HTTPClient {
        let cache = try fleet.cache(
            .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly, staleIfError: staleIfError))
        return try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
    }

    func get(_ path: String) -> HTTPRequest { HTTPRequest(method: .get, scheme: nil, authority: nil, path: path) }

    @Test func aSecondClientIsAnsweredFromRedisNotTheOrigin() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let first = try makeClient(server, try redis.fleet())
        let second = try makeClient(server, try redis.fleet())
        let a = try await first.send(get("/cache/etag?etag=a&max-age=60"))
        #expect(!a.isFromCache)
        let b = try await second.send(get("/cache/etag?etag=a&max-age=60"))
        #expect(b.isFromCache)
        #expect(b.body == a.body)
        #expect(server.requestCount == 1)
    }

    @Test func identitiesStaySeparateAndNoCredentialReachesRedis() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let alice = try makeClient(server, try redis.fleet())
        try alice.logIn(credential: "alice-secret-token")
        let bob = try makeClient(server, try redis.fleet())
        try bob.logIn(credential: "bob-secret-token")
        let aliceElsewhere = try makeClient(server, try redis.fleet())
        try aliceElsewhere.logIn(credential: "alice-secret-token")

        _ = try await alice.send(get("/cache/etag?etag=me&max-age=60&api_key=query-secret"))
        let forBob = try await bob.send(get("/cache/etag?etag=me&max-age=60&api_key=query-secret"))
        #expect(!forBob.isFromCache)
        let forAlice = try await aliceElsewhere.send(get("/cache/etag?etag=me&max-age=60&api_key=query-secret"))
        #expect(forAlice.isFromCache)
        #expect(server.requestCount == 2)
        let stored = try redis.dump()
        #expect(!stored.isEmpty)
        for secret in ["alice-secret-token", "bob-secret-token", "query-secret"] {
            #expect(stored.range(of: Data(secret.utf8)) == nil, "\(secret) is in Redis")
        }
    }

    @Test func logoutPurgesTheUsersEntriesFromRedis() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let fleet = try redis.fleet()
        let client = try makeClient(server, fleet)
        try client.logIn(credential: "carol-token")
        _ = try await client.send(get("/cache/etag?etag=c&max-age=60"))
        _ = try await client.send(get("/cache/etag?etag=anon&max-age=60"))
        try await expectPurgedByLogout(
            client, fleet, redis, server, credential: "carol-token", path: "/cache/etag?etag=c&max-age=60",
            requests: 3)
    }

    /// Logs `client` out; then another process of the same user is not answered from Redis
    /// for `path`, and the origin has seen `requests` requests in all.
    func expectPurgedByLogout(
        _ client: HTTPClient, _ fleet: RedisFleet, _ redis: RedisTestServer, _ server: TestServer,
        credential: String, path: String, requests: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        client.logOut()
        await fleet.flush()
        let other = try makeClient(server, try redis.fleet())
        try other.logIn(credential: credential)
        let again = try await other.send(get(path))
        #expect(!again.isFromCache, sourceLocation: sourceLocation)
        #expect(server.requestCount == requests, sourceLocation: sourceLocation)
    }

    @Test func aLogoutWhileRedisIsUnreachableIsReplayedWhenItAnswers() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let fleet = try redis.fleet(commandTimeout: .milliseconds(100), retryAfter: .milliseconds(50))
        let client = try makeClient(server, fleet)
        try client.logIn(credential: "dave-token")
        _ = try await client.send(get("/cache/etag?etag=d&max-age=60"))
        // Redis keeps its data but answers nothing (a partition), so the purge cannot land.
        redis.pause()
        client.logOut()
        await fleet.flush()
        #expect(fleet.client.pendingRemovals == 1)
        redis.resume()
        let deadline = ContinuousClock.now + .seconds(10)
        while fleet.client.pendingRemovals > 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            await fleet.flush()
        }
        #expect(fleet.client.pendingRemovals == 0)
        let other = try makeClient(server, try redis.fleet())
        try other.logIn(credential: "dave-token")
        #expect(try await other.send(get("/cache/etag?etag=d&max-age=60")).isFromCache == false)
        #expect(server.requestCount == 2)
    }

    @Test func aStaleEntryIsRevalidatedFromAnotherClient() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let first = try makeClient(server, try redis.fleet())
        let second = try makeClient(server, try redis.fleet())
        let a = try await first.send(get("/cache/etag?etag=v2"))  // no-cache: revalidate every time
        let b = try await second.send(get("/cache/etag?etag=v2"))
        #expect(b.isFromCache)
        #expect(b.status.code == 200)
        #expect(b.body == a.body)
        #expect(server.recordedRequests.last?.header("If-None-Match") == "\"v2\"")
    }

    @Test func anUnsafeCallInOneClientInvalidatesRedisForTheOthers() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let fleet = try redis.fleet()
        let writer = try makeClient(server, fleet)
        _ = try await writer.send(get("/cache/etag?etag=w&max-age=60"))
        _ = try await writer.send(
            HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/cache/etag?etag=w&max-age=60"))
        await fleet.flush()
        let reader = try makeClient(server, try redis.fleet())
        let read = try await reader.send(get("/cache/etag?etag=w&max-age=60"))
        #expect(!read.isFromCache)
    }

    @Test func concurrentMissesInFourClientsReachTheOriginOnce() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        server.route("/slow") { _ in
            var response = ScriptedResponse.json(["slow": true])
            response.headers[.cacheControl] = "max-age=60"
            response.delay = .milliseconds(200)
            return response
        }
        let clients = try (0..<4).map { _ in try makeClient(server, try redis.fleet()) }
        let bodies = try await withThrowingTaskGroup(of: Data.self) { group in
            for client in clients { group.addTask { try await client.send(get("/slow")).body } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies.count == 4)
        #expect(Set(bodies).count == 1)
        #expect(server.requestCount == 1)
    }

    @Test func callsGoOnWhileRedisIsDownAndShareAgainWhenItReturns() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let fleetA = try redis.fleet(retryAfter: .milliseconds(50))
        let fleetB = try redis.fleet(retryAfter: .milliseconds(50))
        let first = try makeClient(server, fleetA)
        let second = try makeClient(server, fleetB)
        redis.stop()
        let started = ContinuousClock.now
        for index in 0..<20 {
            let response = try await first.send(get("/cache/etag?etag=down\(index)&max-age=60"))
            #expect(response.status.code == 200)
        }
        // Each call pays at most one refused connect; most are short-circuited by the breaker.
        #expect(ContinuousClock.now - started < TestTimeBound.scaled(.seconds(5)))
        #expect(!fleetA.isAvailable || fleetA.client.statistics.failures > 0)
        #expect(server.requestCount == 20)
        // The local memory tier still answers while Redis is down.
        let local = try await first.send(get("/cache/etag?etag=down0&max-age=60"))
        #expect(local.isFromCache)

        try await redis.start()
        // Wait for the breaker to let a call through again (an event: a store reaching Redis).
        let deadline = ContinuousClock.now + .seconds(10)
        var shared = false
        var round = 0
        while ContinuousClock.now < deadline, !shared {
            round += 1
            let path = "/cache/etag?etag=up\(round)&max-age=60"
            _ = try await first.send(get(path))
            shared = try await second.send(get(path)).isFromCache
        }
        #expect(shared)
        #expect(fleetA.isAvailable)
    }

    @Test func aLoadRunSurvivesRedisStoppingAndStartingUnderIt() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let fleets = try (0..<3).map { _ in try redis.fleet(retryAfter: .milliseconds(50)) }
        let clients = try fleets.map { try makeClient(server, $0) }
        let stop = StopFlag()
        // Three clients call without pause, each a new cacheable URL, while Redis goes away
        // and comes back; every call must succeed.
        let load = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for (index, client) in clients.enumerated() {
                    group.addTask {
                        var calls = 0
                        while !stop.isSet {
                            calls += 1
                            let response = try await client.send(get("/cache/etag?etag=l\(index)-\(calls)&max-age=60"))
                            #expect(response.status.code == 200)
                        }
                        return calls
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        #expect(await server.waitForRequests(atLeast: 15))
        redis.stop()
        #expect(await server.waitForRequests(atLeast: 45))
        try await redis.start()
        #expect(await server.waitForRequests(atLeast: 75))
        stop.set()
        let calls = try await load.value
        #expect(calls >= 75)
        #expect(fleets.contains { $0.client.statistics.failures > 0 })
        // Sharing works again once the breaker lets commands through.
        let deadline = ContinuousClock.now + .seconds(10)
        var shared = false
        var round = 0
        while ContinuousClock.now < deadline, !shared {
            round += 1
            _ = try await clients[0].send(get("/cache/etag?etag=after\(round)&max-age=60"))
            shared = try await clients[1].send(get("/cache/etag?etag=after\(round)&max-age=60")).isFromCache
        }
        #expect(shared)
    }

    @Test func aHungRedisCostsACallABoundedTime() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let fleet = try redis.fleet(commandTimeout: .milliseconds(100), retryAfter: .seconds(30))
        let client = try makeClient(server, fleet)
        _ = try await client.send(get("/cache/etag?etag=warm&max-age=60"))
        redis.pause()
        defer { redis.resume() }
        let started = ContinuousClock.now
        for index in 0..<10 {
            let response = try await client.send(get("/cache/etag?etag=hung\(index)&max-age=60"))
            #expect(response.status.code == 200)
        }
        let elapsed = ContinuousClock.now - started
        // One command timeout opens the breaker; the other calls do not wait for Redis at all.
        #expect(elapsed < TestTimeBound.scaled(.seconds(2)), "10 calls took \(elapsed)")
        #expect(!fleet.isAvailable)
        #expect(fleet.client.statistics.shortCircuited > 0)
    }

    @Test func aWrongPasswordFallsBackToLocalAndTheRightOneShares() async throws {
        let redis = try await RedisTestServer.make(password: "s3cret-pass")
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let refused = try makeClient(server, try redis.fleet(password: "wrong"))
        let response = try await refused.send(get("/cache/etag?etag=p&max-age=60"))
        #expect(response.status.code == 200)
        let first = try makeClient(server, try redis.fleet())
        let second = try makeClient(server, try redis.fleet())
        _ = try await first.send(get("/cache/etag?etag=q&max-age=60"))
        #expect(try await second.send(get("/cache/etag?etag=q&max-age=60")).isFromCache)
    }

    /// On the old code a fill lease or stale retention of `.seconds(Int64.max)` overflowed
    /// converting to Redis's milliseconds and trapped the process at the first miss.
    @Test func extremeLeasesAndRetentionsAreClampedNotTrapped() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        func fleet() throws -> RedisFleet {
            var configuration = try redis.fleet().configuration
            configuration.fillLease = .seconds(Int64.max)
            configuration.staleRetention = .seconds(Int64.max)
            return try RedisFleet(configuration: configuration)
        }
        let first = try makeClient(server, try fleet())
        let second = try makeClient(server, try fleet())
        _ = try await first.send(get("/cache/etag?etag=x&max-age=60"))
        #expect(try await second.send(get("/cache/etag?etag=x&max-age=60")).isFromCache)
        #expect(server.requestCount == 1)
        #expect(Duration.seconds(Int64.max).redisMilliseconds == 1_000_000_000_000)
        #expect(Duration.seconds(Int64.min).redisMilliseconds == 1)
        #expect(Duration.milliseconds(1500).redisMilliseconds == 1500)
    }

    /// On the old code a zero or negative timeout made every connection fail at once and
    /// `.seconds(Int64.max)` was refused by hiredis: the fleet silently never shared.
    @Test(arguments: [Duration.seconds(Int64.min), .zero, .seconds(Int64.max)])
    func fleetTimeoutsAreRefusedOrClamped(_ timeout: Duration) async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        var configuration = try redis.fleet().configuration
        configuration.connectTimeout = timeout
        configuration.commandTimeout = timeout
        guard timeout > .zero else {
            let error = #expect(throws: CourierError.self) { try RedisFleet(configuration: configuration) }
            #expect(error?.code == .configuration)
            #expect(error?.message.contains("must be positive") == true)
            return
        }
        let first = try makeClient(server, try RedisFleet(configuration: configuration))
        let second = try makeClient(server, try RedisFleet(configuration: configuration))
        _ = try await first.send(get("/cache/etag?etag=t&max-age=60"))
        #expect(try await second.send(get("/cache/etag?etag=t&max-age=60")).isFromCache)
        #expect(server.requestCount == 1)
    }

    @Test func aShortIdentityKeyOrDiskStorageIsRefused() throws {
        #expect(throws: CourierError.self) {
            try RedisFleet(configuration: .init(identityKey: [1, 2, 3]))
        }
        let fleet = try RedisFleet(configuration: .init(identityKey: RedisTestServer.identityKey))
        let error = #expect(throws: CourierError.self) {
            try fleet.cache(.init(rules: [], storage: .disk(directory: NSTemporaryDirectory())))
        }
        #expect(error?.code == .configuration)
    }

    /// The password is "never logged", and the identity key is the fleet's secret: on the old
    /// code a configuration printed or dumped (a service logging its settings at start) showed
    /// both, the key byte by byte. They are redacted in its description and its reflection;
    /// where Redis is still shows.
    @Test func aPrintedOrDumpedConfigurationShowsNeitherThePasswordNorTheIdentityKey() {
        let key: [UInt8] = (0..<32).map { UInt8(200 + $0 % 50) }
        var configuration = RedisFleet.Configuration(
            host: "redis.internal", port: 6380, identityKey: key, password: "hunter2-redis-secret")
        configuration.username = "courier-app"
        var dumped = ""
        dump(configuration, to: &dumped)
        debugPrint(configuration, to: &dumped)
        let texts = [
            String(describing: configuration), String(reflecting: configuration), "\(configuration)", dumped,
            String(describing: [configuration]),
        ]
        // Every setting still shows.
        var stored: [String] = []
        _ = _forEachField(of: RedisFleet.Configuration.self, options: []) { name, _, _, _ in
            stored.append(String(cString: name))
            return true
        }
        #expect(Set(Mirror(reflecting: configuration).children.compactMap(\.label)) == Set(stored))
        // The key as `print` lists an array, and as `dump` does, a byte a line.
        let keyBytes = key.map(String.init).joined(separator: ", ")
        let dumpedBytes = key.map { "- \($0)" }.joined(separator: "\n")
        for text in texts {
            let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(!text.contains("hunter2"), "the password in \(text)")
            #expect(
                !text.contains(keyBytes) && !lines.joined(separator: "\n").contains(dumpedBytes),
                "the identity key in \(text)")
            #expect(text.contains("redis.internal") && text.contains("6380"), "the host in \(text)")
        }
    }

    /// Redis is shared with processes that do not hold the fleet's identity key (another app on
    /// the same server, or one taken over): one of them writes, under the key of an anonymous
    /// request, an entry it made itself, in Courier's own format and through Courier's own
    /// code, with a valid checksum. The fleet's processes must not serve it. On the old code
    /// the next process served the forged body as a fresh cache hit and never asked the origin.
    @Test func anEntryWrittenWithoutTheFleetsIdentityKeyIsNotServed() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let path = "/cache/etag?etag=genuine&max-age=60"
        let neighbour = try redis.fleet(identityKey: [UInt8](repeating: 7, count: 32))
        let neighbourCache = try neighbour.cache(
            .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let request = CacheRequest(HTTPRequest(method: .get, url: server.url(path)))
        let url = neighbourCache.storedURL(of: request)
        let now = Date()
        let forged = CacheEntry(
            key: neighbourCache.sharedKey(request), url: url, identity: "", variant: "",
            response: HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=600", .eTag: "\"forged\""]),
            body: Data("forged".utf8), requestTime: now, responseTime: now, forcedLifetime: nil, hasQuery: true)
        await neighbourCache.pushShared(forged, request: request, RedisCacheTier(fleet: neighbour))
        #expect(try redis.dump().range(of: Data("forged".utf8)) != nil, "the forged entry is in Redis")

        let client = try makeClient(server, try redis.fleet())
        let response = try await client.send(get(path))
        #expect(!response.isFromCache)
        #expect(response.body != Data("forged".utf8))
        #expect(server.requestCount == 1)
    }

    /// A fill claim that no process made (every claim expires with its lease; this one has no
    /// time to live), written by a neighbour on the same Redis, is not another process fetching
    /// the entry: the call asks the origin at once. On the old code every miss of the resource
    /// waited the whole fill lease (here 20 s) first, for as long as the value stayed.
    @Test func aFillClaimWithoutATimeToLiveIsNotWaitedFor() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        var configuration = try redis.fleet().configuration
        configuration.fillLease = .seconds(20)
        let fleet = try RedisFleet(configuration: configuration)
        let cache = try fleet.cache(.init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly))
        let path = "/cache/etag?etag=claimed&max-age=60"
        let key = cache.sharedKey(CacheRequest(HTTPRequest(method: .get, url: server.url(path))))
        _ = try redis.command("SET", fleet.key("f", RedisFleet.digest(key)), "not-a-claim")
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
        let started = ContinuousClock.now
        #expect(try await client.send(get(path)).isFromCache == false)
        #expect(ContinuousClock.now - started < TestTimeBound.scaled(.seconds(10)))
        #expect(server.requestCount == 1)
    }

    /// Call A's fill claim runs out while A still fetches; call B of the same process claims
    /// the key again; then A finishes and releases. The claims were kept per key, one token per
    /// process, so A's release took B's token and deleted B's claim: another process then
    /// started a second fill while B still fetched. A release touches only its own call's claim.
    @Test func aCallWhoseClaimRanOutDoesNotReleaseTheNextCallsClaim() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        var configuration = try redis.fleet().configuration
        configuration.fillLease = .milliseconds(300)
        let fleet = try RedisFleet(configuration: configuration)
        let tier = RedisCacheTier(fleet: fleet)
        let otherProcess = RedisCacheTier(fleet: try redis.fleet())
        let key = "GET http://127.0.0.1/claimed"
        let claimKey = fleet.key("f", RedisFleet.digest(key))

        guard case .claimed(let a) = await tier.claimFill(key: key) else {
            Issue.record("call A could not claim the fill")
            return
        }
        // A's lease runs out while A is still fetching.
        let deadline = ContinuousClock.now + TestTimeBound.scaled(.seconds(10))
        while try redis.command("EXISTS", claimKey) != .integer(0), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        guard case .claimed(let b) = await tier.claimFill(key: key) else {
            Issue.record("call B could not claim the fill once A's lease ran out")
            return
        }
        // B is still fetching: its claim outlives the checks below however slow the machine.
        _ = try redis.command("PEXPIRE", claimKey, "60000")
        tier.releaseFill(key: key, token: a)  // A is done
        await fleet.flush()
        #expect(try redis.command("EXISTS", claimKey) == .integer(1), "A's release deleted B's claim")
        #expect(await otherProcess.claimFill(key: key) == .held, "another process claimed B's fill")
        tier.releaseFill(key: key, token: b)  // B is done
        await fleet.flush()
        #expect(try redis.command("EXISTS", claimKey) == .integer(0), "B's release left its claim")
    }

    /// A variant far larger than the cache stores (a neighbour's on the same Redis, or garbage)
    /// is left in Redis: every read of the resource copied all of it over the network and into
    /// memory (and one larger than a command timeout's worth of bytes failed the read and
    /// opened the breaker for every call), only to find it unsealed. The read script skips
    /// variants past the cache's entry limit with room for the head.
    @Test func aVariantFarLargerThanTheCachesEntryLimitIsNotRead() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let fleet = try redis.fleet()
        let cache = try fleet.cache(
            .init(rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly, maxEntryBytes: 64 << 10))
        let path = "/cache/etag?etag=huge&max-age=60"
        let key = cache.sharedKey(CacheRequest(HTTPRequest(method: .get, url: server.url(path))))
        let huge = 8 << 20
        _ = try redis.command("HSET", fleet.key("e", RedisFleet.digest(key)), "v:", String(repeating: "x", count: huge))
        let before = try redis.bytesSent()
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
        #expect(try await client.send(get(path)).isFromCache == false)
        let sent = try redis.bytesSent() - before
        #expect(sent < 1 << 20, "Redis sent \(sent) bytes for one call")
        #expect(server.requestCount == 1)
    }

    /// Many variants under one entry, each under the cache's entry limit (a neighbour's, or a
    /// `Vary` on a header with many values): on the old code every read took them all across
    /// the network (here 24 MiB for one call), though the memory tier they are copied into
    /// holds 2 MiB. A read now stops at what the memory tier holds.
    @Test func manyVariantsUnderTheEntryLimitAreNotReadPastTheMemoryTiersSize() async throws {
        let redis = try await RedisTestServer.make()
        defer { redis.stop() }
        let server = try TestServer()
        defer { server.stop() }
        let fleet = try redis.fleet(commandTimeout: .seconds(5))
        let cache = try fleet.cache(
            .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)], storage: .memoryOnly, memoryCapacityBytes: 2 << 20,
                maxEntryBytes: 64 << 10))
        let path = "/cache/etag?etag=many&max-age=60"
        let key = cache.sharedKey(CacheRequest(HTTPRequest(method: .get, url: server.url(path))))
        let variant = String(repeating: "x", count: 1 << 20)
        for index in 0..<24 {
            _ = try redis.command("HSET", fleet.key("e", RedisFleet.digest(key)), "v:\(index)", variant)
        }
        let before = try redis.bytesSent()
        let client = try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
        #expect(try await client.send(get(path)).isFromCache == false)
        let sent = try redis.bytesSent() - before
        #expect(sent < 4 << 20, "Redis sent \(sent) bytes for one call")
        #expect(server.requestCount == 1)
    }

    @Test func entriesRoundTripThroughTheCodecAndDamageIsRejected() throws {
        let entry = CacheEntry(
            key: "a:1 http://h/x", url: "http://h/x", identity: "a:1", variant: "Accept=json",
            response: HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=5", .eTag: "\"e\""]),
            body: Data("hello".utf8), requestTime: Date(timeIntervalSince1970: 10),
            responseTime: Date(timeIntervalSince1970: 11), forcedLifetime: 30, hasQuery: false)
        let encoded = SharedCacheCodec.encode(entry)
        let decoded = try #require(SharedCacheCodec.decode(encoded))
        #expect(decoded.key == entry.key)
        #expect(decoded.variant == entry.variant)
        #expect(decoded.body == entry.body)
        #expect(decoded.response == entry.response)
        #expect(decoded.forcedLifetime == 30)
        var damaged = encoded
        damaged[damaged.count - 20] ^= 0xff
        #expect(SharedCacheCodec.decode(damaged) == nil)
        #expect(SharedCacheCodec.decode(encoded.prefix(encoded.count - 1)) == nil)
        #expect(SharedCacheCodec.decode(Data()) == nil)
    }
}

/// Tells the load tasks of a test to finish.
final class StopFlag: Sendable {
    private let stopped = LockedValue(false)
    var isSet: Bool { stopped.withLock { $0 } }
    func set() { stopped.withLock { $0 = true } }
}
