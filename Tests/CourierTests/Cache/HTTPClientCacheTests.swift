import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// The cache wired into `HTTPClient` (pipeline steps 6 and 8), against the loopback server.
@Suite struct HTTPClientCacheTests {
    let clock = ManualClock(Date())

    func makeCache(_ storage: HostScopedCache.Configuration.Storage = .memoryOnly, staleIfError: Bool = false) throws
        -> HostScopedCache
    {
        try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)], storage: storage, staleIfError: staleIfError,
                clock: clock.cacheClock))
    }

    func makeClient(_ server: TestServer, cache: HostScopedCache) throws -> HTTPClient {
        try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache))
    }

    func get(_ path: String, method: HTTPRequest.Method = .get) -> HTTPRequest {
        HTTPRequest(method: method, scheme: nil, authority: nil, path: path)
    }

    @Test func aFreshHitNeverTouchesTheNetwork() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient(server, cache: try makeCache())
        let first = try await client.send(get("/cache/etag?etag=a&max-age=60"))
        #expect(!first.isFromCache)
        let second = try await client.send(get("/cache/etag?etag=a&max-age=60"))
        #expect(second.isFromCache)
        #expect(!second.isStale)
        #expect(second.body == first.body)
        #expect(second.status.code == 200)
        #expect(server.requestCount == 1)
    }

    @Test func revalidationSendsIfNoneMatchAndServesTheStoredBodyOn304() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient(server, cache: try makeCache())
        let first = try await client.send(get("/cache/etag?etag=v2"))  // no-cache: always revalidate
        let second = try await client.send(get("/cache/etag?etag=v2"))
        #expect(second.isFromCache)
        #expect(second.status.code == 200)
        #expect(second.body == first.body)
        #expect(server.requestCount == 2)
        #expect(server.recordedRequests.last?.header("If-None-Match") == "\"v2\"")
    }

    @Test func ifModifiedSinceRevalidation() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient(server, cache: try makeCache())
        _ = try await client.send(get("/cache/last-modified"))
        let second = try await client.send(get("/cache/last-modified"))
        #expect(second.isFromCache)
        #expect(server.recordedRequests.last?.header("If-Modified-Since") != nil)
    }

    @Test func cacheOnlyCallsFailWithNotCachedAndSendNothing() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient(server, cache: try makeCache())
        var options = CallOptions()
        options.cachePolicy = .returnCacheDataDontLoad
        let error = await #expect(throws: CourierError.self) {
            try await client.send(get("/cache/etag?max-age=60"), options: options)
        }
        #expect(error?.code == .notCached)
        #expect(server.requestCount == 0)
    }

    @Test func perCallLifetimeCachesAnUncacheableEndpoint() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient(server, cache: try makeCache())
        var options = CallOptions()
        options.cacheLifetime = .seconds(180)
        _ = try await client.send(get("/response-headers?X-A=1"), options: options)
        clock.advance(170)
        #expect(try await client.send(get("/response-headers?X-A=1"), options: options).isFromCache)
        clock.advance(20)
        #expect(!(try await client.send(get("/response-headers?X-A=1"), options: options).isFromCache))
        #expect(server.requestCount == 2)
    }

    @Test func unsafeMethodsInvalidate() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient(server, cache: try makeCache())
        let path = "/response-headers?Cache-Control=max-age%3D60"
        _ = try await client.send(get(path))
        #expect(try await client.send(get(path)).isFromCache)
        _ = try await client.send(get(path, method: .post), body: .data(Data("x".utf8)))
        #expect(!(try await client.send(get(path)).isFromCache))
        #expect(server.requestCount == 3)
    }

    @Test func staleIfErrorServesAStaleCopyWhenTheServerIsGone() async throws {
        let server = try TestServer()
        let client = try makeClient(server, cache: try makeCache(staleIfError: true))
        let path = "/response-headers?Cache-Control=max-age%3D10"
        let first = try await client.send(get(path))
        clock.advance(30)
        server.stop()
        let offline = try await client.send(get(path))
        #expect(offline.isFromCache)
        #expect(offline.isStale)
        #expect(offline.body == first.body)
    }

    @Test func persistsAcrossTwoClientInstances() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let directory = TemporaryDirectory()
        let path = "/cache/etag?etag=p&max-age=600"
        let first = try await makeClient(server, cache: try makeCache(.disk(directory: directory.path))).send(get(path))
        let second = try await makeClient(server, cache: try makeCache(.disk(directory: directory.path))).send(
            get(path))
        #expect(second.isFromCache)
        #expect(second.body == first.body)
        #expect(server.requestCount == 1)
    }

    @Test func usersDoNotShareEntriesAndLogoutPurges() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let client = try makeClient(server, cache: cache)
        let path = "/response-headers?Cache-Control=private%2C%20max-age%3D60"
        try client.logIn(credential: "alice")
        _ = try await client.send(get(path))
        #expect(try await client.send(get(path)).isFromCache)
        try client.logIn(credential: "bob")
        #expect(!(try await client.send(get(path)).isFromCache))
        #expect(server.requestCount == 2)
        // Logging bob out drops bob's entries, not alice's.
        client.logOut()
        let alice = CacheRequest(
            HTTPRequest(
                method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: path,
                headerFields: [.authorization: "Bearer alice"]))
        let bob = CacheRequest(
            HTTPRequest(
                method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: path,
                headerFields: [.authorization: "Bearer bob"]))
        #expect(try cache.lookup(alice).isFresh)
        #expect(try cache.lookup(bob).isMiss)
    }

    /// A renewed credential (`logIn(credential:replacing:)`) goes on with the same session: the
    /// logout purges what was cached with the token it replaced too. With `logIn(credential:)`
    /// a new token starts a new session, and alice's answers cached before her refresh stayed
    /// on disk after her logout.
    @Test func aRenewedCredentialKeepsTheSessionForTheLogoutPurge() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let client = try makeClient(server, cache: cache)
        let path = "/response-headers?Cache-Control=private%2C%20max-age%3D60"
        try client.logIn(credential: "alice-1")
        _ = try await client.send(get(path))
        #expect(try client.logIn(credential: "alice-2", replacing: "alice-1"))
        _ = try await client.send(get(path))
        let entries = ["alice-1", "alice-2"].map { token in
            CacheRequest(
                HTTPRequest(
                    method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: path,
                    headerFields: [.authorization: "Bearer \(token)"]))
        }
        for entry in entries { #expect(try cache.lookup(entry).isFresh) }
        client.logOut()
        for entry in entries { #expect(try cache.lookup(entry).isMiss) }
    }

    @Test func theLogoutNotificationPurgesTheUsersEntries() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let center = NotificationCenter()
        let client = try HTTPClient(
            configuration: .init(baseURL: server.baseURL, notificationCenter: center, cache: cache))
        let path = "/response-headers?Cache-Control=max-age%3D60"
        center.post(
            name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "carol"])
        _ = try await client.send(get(path))
        #expect(try await client.send(get(path)).isFromCache)
        center.post(name: .courierUserDidLogOut, object: nil)
        center.post(
            name: .courierUserDidLogIn, object: nil, userInfo: [CourierNotificationKey.credential: "carol"])
        #expect(!(try await client.send(get(path)).isFromCache))
        #expect(server.requestCount == 2)
    }

    @Test func aResponseReachedThroughRedirectsIsNotStoredUnderTheFirstURL() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try makeClient(server, cache: try makeCache())
        let path = "/redirect-to?url=%2Fresponse-headers%3FCache-Control%3Dmax-age%253D60"
        let first = try await client.send(get(path))
        #expect(first.redirectCount == 1)
        #expect(first.head.headerFields[.cacheControl] == "max-age=60")  // cacheable in itself
        #expect(!(try await client.send(get(path)).isFromCache))
    }
}
