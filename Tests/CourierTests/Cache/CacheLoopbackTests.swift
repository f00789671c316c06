import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// `HostScopedCache.load(_:send:)` against the loopback `TestServer`, with a raw-socket
/// sender standing in for the transport: the server's request count proves when a call did
/// or did not touch the network.
@Suite struct CacheLoopbackTests {
    let clock = ManualClock(Date())

    func makeCache(staleIfError: Bool = false, storage: HostScopedCache.Configuration.Storage = .memoryOnly) throws
        -> HostScopedCache
    {
        try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", .followHTTP)], storage: storage, staleIfError: staleIfError,
                clock: clock.cacheClock))
    }

    func request(
        _ server: TestServer, _ target: String, method: HTTPRequest.Method = .get, headers: HTTPFields = [:]
    ) -> HTTPRequest {
        HTTPRequest(
            method: method, scheme: "http", authority: "127.0.0.1:\(server.port)", path: target, headerFields: headers)
    }

    /// Sends `request` on a fresh raw connection (`load` times it with the injected clock). The
    /// response's `Date` is restamped from that clock, as from a server whose clock agrees with
    /// ours (the test moves its clock ahead of the real one). The socket calls run off the
    /// cooperative pool (see `offPool`), so they cannot stall the run's other async tests.
    func send(_ server: TestServer, _ request: HTTPRequest) async throws -> CacheTransportResponse {
        let connection = try await offPool { try RawHTTPConnection(port: server.port) }
        let headers = request.headerFields.map { ($0.name.rawName, $0.value) }
        let raw = try await connection.request(request.method.rawValue, request.path ?? "/", headers: headers)
        var fields = HTTPFields()
        for (name, value) in raw.headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        if fields[.date] != nil { fields[.date] = HTTPDateFormat.format(clock.now) }
        return CacheTransportResponse(
            response: HTTPResponse(status: .init(code: raw.status), headerFields: fields), body: raw.body)
    }

    func load(_ cache: HostScopedCache, _ server: TestServer, _ request: CacheRequest) async throws -> CacheLoadResult {
        try await cache.load(request) { outgoing in try await send(server, outgoing) }
    }

    @Test func aFreshHitNeverTouchesTheNetwork() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let call = CacheRequest(request(server, "/cache/etag?etag=a&max-age=60"))
        let first = try await load(cache, server, call)
        #expect(first.source == .network)
        let second = try await load(cache, server, call)
        #expect(second.source == .cache)
        #expect(second.isFromCache)
        #expect(second.body == first.body)
        #expect(server.requestCount == 1)
    }

    @Test func etagRevalidationGets304AndServesTheStoredBody() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let call = CacheRequest(request(server, "/cache/etag?etag=v7&max-age=60"))
        let first = try await load(cache, server, call)
        clock.advance(61)
        let second = try await load(cache, server, call)
        #expect(second.source == .revalidated)
        #expect(second.body == first.body)
        #expect(server.requestCount == 2)
        #expect(server.recordedRequests.last?.header("If-None-Match") == "\"v7\"")
        // The 304 refreshed the entry: fresh again without the network.
        #expect(try await load(cache, server, call).source == .cache)
        #expect(server.requestCount == 2)
    }

    /// A 304 whose `Vary` is not the stored answer's (RFC 9111 §4.1: `*` never matches) is
    /// served once, and the merged entry is not reused although the 304 made it fresh: its new
    /// `Vary` does not match the variant it was stored under. (A review suspected a merged
    /// `Vary: *` matched every request; this shows it does not.)
    @Test(arguments: ["*", "Accept-Language"])
    func a304ThatChangesVaryIsServedOnceAndNotKept(vary: String) async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let path = "/validated"
        server.enqueue(
            ScriptedResponse(
                status: 200, headers: [.eTag: "\"v1\"", .cacheControl: "max-age=0", .contentType: "text/plain"],
                body: Data("stored".utf8)))
        server.enqueue(
            ScriptedResponse(status: 304, headers: [.eTag: "\"v1\"", .cacheControl: "max-age=600", .vary: vary]))
        server.enqueue(.text("from the network"))
        let call = CacheRequest(request(server, path))
        #expect(try await load(cache, server, call).source == .network)
        let revalidated = try await load(cache, server, call)
        #expect(revalidated.source == .revalidated)
        #expect(revalidated.body == Data("stored".utf8))
        // The 304 made the entry fresh for ten minutes, but its Vary says it is not to be reused.
        let third = try await load(cache, server, call)
        #expect(third.source == .network)
        #expect(third.body == Data("from the network".utf8))
        #expect(server.requestCount == 3)
    }

    @Test func lastModifiedRevalidation() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let call = CacheRequest(request(server, "/cache/last-modified"))
        let first = try await load(cache, server, call)
        #expect(first.source == .network)
        let second = try await load(cache, server, call)
        #expect(second.source == .revalidated)
        #expect(second.body == first.body)
        #expect(server.recordedRequests.last?.header("If-Modified-Since") == "Wed, 21 Oct 2015 07:28:00 GMT")
    }

    @Test func noStoreResponsesAlwaysGoToTheNetwork() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let call = CacheRequest(request(server, "/response-headers?Cache-Control=no-store"))
        _ = try await load(cache, server, call)
        #expect(try await load(cache, server, call).source == .network)
        #expect(server.requestCount == 2)
    }

    @Test func unsafeMethodsInvalidate() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let target = "/response-headers?Cache-Control=max-age%3D60"
        _ = try await load(cache, server, CacheRequest(request(server, target)))
        #expect(try await load(cache, server, CacheRequest(request(server, target))).source == .cache)
        _ = try await load(cache, server, CacheRequest(request(server, target, method: .post)))
        #expect(try await load(cache, server, CacheRequest(request(server, target))).source == .network)
        #expect(server.requestCount == 3)
    }

    @Test func staleIfErrorServesTheStaleEntryOn5xxAndOnConnectionFailure() async throws {
        let server = try TestServer()
        let cache = try makeCache(staleIfError: true)
        let call = CacheRequest(request(server, "/response-headers?Cache-Control=max-age%3D10"))
        let first = try await load(cache, server, call)
        clock.advance(20)
        server.enqueue(.status(503))
        let on503 = try await load(cache, server, call)
        #expect(on503.source == .staleOnError)
        #expect(on503.isStale)
        #expect(on503.body == first.body)
        server.stop()
        let offline = try await load(cache, server, call)
        #expect(offline.source == .staleOnError)
        #expect(offline.body == first.body)
    }

    @Test func cancellationIsNeverAnsweredWithAStaleCopy() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache(staleIfError: true)
        let call = CacheRequest(request(server, "/response-headers?Cache-Control=max-age%3D10"))
        _ = try await load(cache, server, call)
        clock.advance(20)
        await #expect(throws: CancellationError.self) {
            try await cache.load(call) { _ in throw CancellationError() }
        }
        let cancelled = await #expect(throws: CourierError.self) {
            try await cache.load(call) { _ in throw CourierError(.cancelled, "cancelled") }
        }
        #expect(cancelled?.code == .cancelled)
        let refused = try await cache.load(call) { _ in throw CourierError(.cannotConnect, "refused") }
        #expect(refused.source == .staleOnError)
    }

    @Test func withoutStaleIfErrorA5xxIsPassedOn() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let call = CacheRequest(request(server, "/response-headers?Cache-Control=max-age%3D10"))
        _ = try await load(cache, server, call)
        clock.advance(20)
        server.enqueue(.status(503))
        let result = try await load(cache, server, call)
        #expect(result.source == .network)
        #expect(result.response.status.code == 503)
    }

    @Test func cacheOnlyMissThrowsWithoutTouchingTheNetwork() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let call = CacheRequest(request(server, "/cache/etag?max-age=60"), policy: .returnCacheDataDontLoad)
        let error = await #expect(throws: CourierError.self) { try await load(cache, server, call) }
        #expect(error?.code == .notCached)
        #expect(server.requestCount == 0)
    }

    @Test func persistedEntriesServeAfterRestartWithoutTheNetwork() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let directory = TemporaryDirectory()
        let call = CacheRequest(request(server, "/cache/etag?etag=p&max-age=600"))
        let first = try await load(try makeCache(storage: .disk(directory: directory.path)), server, call)
        let restarted = try makeCache(storage: .disk(directory: directory.path))
        let second = try await load(restarted, server, call)
        #expect(second.source == .cache)
        #expect(second.body == first.body)
        #expect(server.requestCount == 1)
    }

    @Test func responsesMarkedNotStorableAreNotStored() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let call = CacheRequest(request(server, "/cache/etag?max-age=60"))
        for _ in 0..<2 {
            let result = try await cache.load(call) { outgoing in
                var response = try await send(server, outgoing)
                response.mayStore = false  // e.g. it came from a redirect target
                return response
            }
            #expect(result.source == .network)
        }
        #expect(server.requestCount == 2)
    }

    @Test func usersDoNotShareEntries() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cache = try makeCache()
        let target = "/response-headers?Cache-Control=private%2C%20max-age%3D60"
        let alice = CacheRequest(request(server, target, headers: [.authorization: "Bearer alice"]))
        let bob = CacheRequest(request(server, target, headers: [.authorization: "Bearer bob"]))
        _ = try await load(cache, server, alice)
        #expect(try await load(cache, server, bob).source == .network)
        #expect(try await load(cache, server, alice).source == .cache)
        #expect(try await load(cache, server, bob).source == .cache)
        #expect(server.requestCount == 2)
    }
}
