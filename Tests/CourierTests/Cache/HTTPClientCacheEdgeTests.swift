import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Edge cases of the cache inside `HTTPClient`, against the loopback server whose request
/// count proves when a call did or did not reach the network.
@Suite struct HTTPClientCacheEdgeTests {
    let clock = ManualClock(Date())

    func makeClient(
        _ server: TestServer, policy: CacheRule.Policy = .followHTTP, maxEntryBytes: Int = 8 << 20
    ) throws -> (HTTPClient, HostScopedCache) {
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule("127.0.0.1", policy)], storage: .memoryOnly, maxEntryBytes: maxEntryBytes,
                clock: clock.cacheClock))
        return (try HTTPClient(configuration: .init(baseURL: server.baseURL, cache: cache)), cache)
    }

    func request(_ path: String, method: HTTPRequest.Method = .get) -> HTTPRequest {
        HTTPRequest(method: method, scheme: nil, authority: nil, path: path)
    }

    func cacheRequest(_ server: TestServer, _ path: String) -> CacheRequest {
        CacheRequest(HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1:\(server.port)", path: path))
    }

    func options(_ policy: CachePolicy) -> CallOptions {
        var options = CallOptions()
        options.cachePolicy = policy
        return options
    }

    /// A stored body was served to a call whose `maxResponseSize` it is over: the network
    /// answer would have failed, the cache's was taken as right.
    @Test func aStoredBodyOverTheCallsSizeLimitIsRefused() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/big") { _ in
            var response = ScriptedResponse.text(String(repeating: "x", count: 10_000))
            response.headers[.cacheControl] = "max-age=600"
            return response
        }
        let (client, _) = try makeClient(server)
        #expect(try await client.send(request("/big")).body.count == 10_000)
        var small = CallOptions()
        small.maxResponseSize = 1_000
        let error = await courierError { _ = try await client.send(request("/big"), options: small) }
        #expect(error?.code == .responseTooLarge)
        #expect(server.requestCount == 1)
        // The entry stays for the calls that accept it.
        #expect(try await client.send(request("/big")).isFromCache)
    }

    /// A per-call timeout of zero or less is a configuration error on every call: a fresh
    /// cache hit, which never reaches the transfer that checked it, used to return the answer.
    @Test(arguments: [Duration.zero, .seconds(-1)])
    func aTimeoutOfZeroOrLessIsRefusedOnACacheHitToo(timeout: Duration) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/fresh") { _ in
            var response = ScriptedResponse.text("stored")
            response.headers[.cacheControl] = "max-age=600"
            return response
        }
        let (client, _) = try makeClient(server)
        #expect(try await client.send(request("/fresh")).body == Data("stored".utf8))
        var options = CallOptions()
        options.timeout = timeout
        let error = await courierError { _ = try await client.send(request("/fresh"), options: options) }
        #expect(error?.code == .configuration)
        #expect(server.requestCount == 1)
        #expect(try await client.send(request("/fresh")).isFromCache)
    }

    /// An `Age` sent as a list, or on two lines (a chain of caches that each added one), is
    /// the first member's age (RFC 9111 §5.1): an hour old with `max-age=600` is stale at once.
    /// On the old code the list was no delta-seconds at all, taken for an age of 0, and the
    /// stale answer was served fresh without asking the server for ten minutes.
    @Test(arguments: [["3600", "3600"], ["3600, 3600"], ["3600,10"]])
    func anAgeGivenAsAListCountsItsFirstMember(ages: [String]) async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/aged") { _ in
            var response = ScriptedResponse.text("aged")
            response.headers[.cacheControl] = "max-age=600"
            for age in ages { response.headers.append(HTTPField(name: CacheFieldName.age, value: age)) }
            return response
        }
        let (client, _) = try makeClient(server)
        #expect(try await !client.send(request("/aged")).isFromCache)
        let again = try await client.send(request("/aged"))
        #expect(!again.isFromCache, "an hour old, for ten minutes' freshness")
        #expect(server.requestCount == 2)
    }

    @Test func maxAgeZeroIsStoredAndRevalidatedOnEveryCall() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (client, _) = try makeClient(server)
        let path = "/cache/etag?etag=z&max-age=0"
        let first = try await client.send(request(path))
        #expect(!first.isFromCache)
        for call in 2...3 {
            let again = try await client.send(request(path))
            #expect(again.isFromCache, "call \(call) is a 304 merged with the stored body")
            #expect(again.body == first.body)
            #expect(server.requestCount == call)
            #expect(server.recordedRequests.last?.header("If-None-Match") == "\"z\"")
        }
    }

    /// A 304 whose ETag is not the stored one cannot vouch for the stored body (RFC 9111
    /// §4.3.4): the client asks again without validators and stores what comes back.
    @Test func aNotModifiedWithAnotherETagIsFollowedByAnUnconditionalRequest() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let calls = LockedValue(0)
        server.route("/changing") { request in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            switch call {
            case 1: return ScriptedResponse.text("one").with(.eTag, "\"1\"").with(.cacheControl, "max-age=0")
            case 2: return ScriptedResponse.status(304).with(.eTag, "\"2\"").with(.cacheControl, "max-age=60")
            default: return ScriptedResponse.text("two").with(.eTag, "\"2\"").with(.cacheControl, "max-age=60")
            }
        }
        let (client, _) = try makeClient(server)
        #expect(String(decoding: try await client.send(request("/changing")).body, as: UTF8.self) == "one")
        let second = try await client.send(request("/changing"))
        #expect(String(decoding: second.body, as: UTF8.self) == "two")
        #expect(!second.isFromCache)
        let sent = server.recordedRequests
        #expect(sent.count == 3)
        #expect(sent[1].header("If-None-Match") == "\"1\"")
        #expect(sent[2].header("If-None-Match") == nil)
        let third = try await client.send(request("/changing"))
        #expect(third.isFromCache)
        #expect(String(decoding: third.body, as: UTF8.self) == "two")
        #expect(server.requestCount == 3)
    }

    /// A caller's own `If-None-Match` asks about the version the caller holds, not the stored
    /// one: the server's 304 (here without an ETag, as sloppy servers send it) answers the
    /// caller's validator. On the old code the stored entry's validator gave way to the
    /// caller's, the 304 was merged into the entry of another version: the caller got the old
    /// version's body as a 200, and the entry, made fresh for a minute by the 304, served it to
    /// the next plain call too. A request with conditions of its own goes to the network as it
    /// is (as OkHttp does), and its 304 is the caller's.
    @Test func aCallersOwnConditionalRequestIsNotAnsweredWithTheStoredVersion() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let version = LockedValue("1")
        server.route("/versioned") { request in
            let current = version.withLock { $0 }
            if request.header("If-None-Match") == "\"\(current)\"" {
                return ScriptedResponse.status(304).with(.cacheControl, "max-age=60")
            }
            return ScriptedResponse.text("version \(current)").with(.eTag, "\"\(current)\"")
                .with(.cacheControl, "max-age=0")
        }
        let (client, _) = try makeClient(server)
        #expect(String(decoding: try await client.send(request("/versioned")).body, as: UTF8.self) == "version 1")
        version.withLock { $0 = "2" }
        var conditional = request("/versioned")
        conditional.headerFields[.ifNoneMatch] = "\"2\""
        let answer = try await client.send(conditional)
        #expect(answer.status.code == 304)
        #expect(answer.body.isEmpty)
        #expect(!answer.isFromCache)
        let plain = try await client.send(request("/versioned"))
        #expect(String(decoding: plain.body, as: UTF8.self) == "version 2")
        #expect(server.requestCount == 3)
    }

    /// Courier neither stores HEAD responses nor answers a HEAD from a stored GET (RFC 9111
    /// allows the latter; Courier keeps HEAD a plain network call), and HEAD invalidates nothing.
    @Test func headGoesToTheNetworkAndLeavesTheStoredGETAlone() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (client, _) = try makeClient(server)
        let path = "/response-headers?Cache-Control=max-age%3D60"
        _ = try await client.send(request(path))
        for _ in 0..<2 {
            let head = try await client.send(request(path, method: .head))
            #expect(!head.isFromCache)
        }
        #expect(server.requestCount == 3)
        #expect(try await client.send(request(path)).isFromCache)
        #expect(server.requestCount == 3)
    }

    @Test func aTransferCutShortLeavesNoEntry() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let cut = LockedValue(true)
        server.route("/cut") { _ in
            let response = ScriptedResponse(
                headers: [.cacheControl: "max-age=600", .contentType: "application/octet-stream"],
                body: TestServer.bytePattern(count: 20_000))
            return cut.withLock { $0 } ? response.withFault(.closeDuringBody) : response
        }
        let (client, cache) = try makeClient(server)
        await #expect(throws: (any Error).self) { try await client.send(request("/cut")) }
        #expect(try cache.lookup(cacheRequest(server, "/cut")).isMiss)
        #expect(cache.statistics.stores == 0)
        // The same response received whole is stored: the cut alone kept it out.
        cut.withLock { $0 = false }
        let whole = try await client.send(request("/cut"))
        #expect(whole.body == TestServer.bytePattern(count: 20_000))
        #expect(try await client.send(request("/cut")).isFromCache)
    }

    @Test func aCancelledTransferLeavesNoEntry() async throws {
        let server = try TestServer()
        defer { server.stop() }
        server.route("/slow") { _ in
            ScriptedResponse(
                headers: [.cacheControl: "max-age=600"], body: TestServer.bytePattern(count: 1_000),
                fault: .trickle(bytes: 1, interval: .milliseconds(50)))
        }
        let (client, cache) = try makeClient(server, policy: .forceLifetime(.seconds(600)))
        let task = Task { try await client.send(request("/slow")) }
        #expect(await server.waitForRequests(atLeast: 1))
        task.cancel()
        let outcome = await task.result
        #expect(throws: (any Error).self) { try outcome.get() }
        #expect(try cache.lookup(cacheRequest(server, "/slow")).isMiss)
        #expect(cache.statistics.stores == 0)
    }

    @Test func aBodyOverMaxEntryBytesIsNeverStored() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (client, cache) = try makeClient(server, policy: .forceLifetime(.seconds(600)), maxEntryBytes: 1_000)
        for _ in 0..<2 { #expect(!(try await client.send(request("/bytes/1001")).isFromCache)) }
        #expect(server.requestCount == 2)
        _ = try await client.send(request("/bytes/1000"))
        #expect(try await client.send(request("/bytes/1000")).isFromCache)
        #expect(server.requestCount == 3)
        #expect(cache.statistics.stores == 1)
    }

    @Test func aRequestSayingNoCacheGoesToTheNetworkAndRefreshesTheEntry() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (client, _) = try makeClient(server)
        let path = "/cache/etag?etag=n&max-age=600"
        _ = try await client.send(request(path))
        for (name, value) in [("Cache-Control", "no-cache"), ("Pragma", "no-cache")] {
            var noCache = request(path)
            noCache.headerFields[HTTPField.Name(name)!] = value
            #expect(!(try await client.send(noCache).isFromCache), "\(name): \(value)")
            #expect(server.recordedRequests.last?.header("If-None-Match") == nil, "an unconditional request")
        }
        #expect(server.requestCount == 3)
        #expect(try await client.send(request(path)).isFromCache)
        #expect(server.requestCount == 3)
    }

    @Test func everyPerCallPolicyAgainstTheServer() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (client, _) = try makeClient(server)
        let path = "/cache/etag?etag=p&max-age=60"

        // returnCacheDataElseLoad: loads on a miss (and stores)…
        #expect(!(try await client.send(request(path), options: options(.returnCacheDataElseLoad)).isFromCache))
        #expect(server.requestCount == 1)
        // reloadIgnoringCache: the network even for a fresh entry.
        #expect(!(try await client.send(request(path), options: options(.reloadIgnoringCache)).isFromCache))
        #expect(server.requestCount == 2)
        #expect(server.recordedRequests.last?.header("If-None-Match") == nil)
        // reloadRevalidatingCache: a conditional request even for a fresh entry; the 304 is merged.
        let revalidated = try await client.send(request(path), options: options(.reloadRevalidatingCache))
        #expect(revalidated.isFromCache)
        #expect(server.requestCount == 3)
        #expect(server.recordedRequests.last?.header("If-None-Match") == "\"p\"")
        // Once stale, the cache-only policies still answer from the cache, without the network.
        clock.advance(3600)
        for policy in [CachePolicy.returnCacheDataElseLoad, .returnCacheDataDontLoad] {
            let stale = try await client.send(request(path), options: options(policy))
            #expect(stale.isFromCache)
            #expect(stale.isStale)
        }
        #expect(server.requestCount == 3)
        // useProtocolCachePolicy revalidates it.
        #expect(try await client.send(request(path)).isFromCache)
        #expect(server.requestCount == 4)
        #expect(server.recordedRequests.last?.header("If-None-Match") == "\"p\"")
    }

    /// RFC 9111 §5.2.1.7: a request saying `Cache-Control: only-if-cached` gets a stored answer
    /// or none (`.notCached`), never the server's. With a condition of its caller's own
    /// (`If-None-Match`), or with `.reloadIgnoringCache` or `.reloadRevalidatingCache` (which
    /// want the server's word), it was sent to the server all the same.
    @Test func aRequestSayingOnlyIfCachedNeverReachesTheNetwork() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (client, _) = try makeClient(server)
        let path = "/cache/etag?etag=o&max-age=600"
        _ = try await client.send(request(path))
        func onlyIfCached(_ path: String) -> HTTPRequest {
            var request = request(path)
            request.headerFields[.cacheControl] = "only-if-cached"
            request.headerFields[.ifNoneMatch] = "\"older\""
            return request
        }
        let stored = try await client.send(onlyIfCached(path))
        #expect(stored.isFromCache)
        #expect(stored.status.code == 200)
        for (path, policy) in [
            ("/cache/etag?etag=missing&max-age=600", CachePolicy.useProtocolCachePolicy), (path, .reloadIgnoringCache),
            (path, .reloadRevalidatingCache),
        ] {
            do {
                let answer = try await client.send(onlyIfCached(path), options: options(policy))
                Issue.record("expected .notCached, got \(answer.status.code) (from the cache: \(answer.isFromCache))")
            } catch {
                #expect((error as? CourierError)?.code == .notCached, "\(path) \(policy)")
            }
        }
        #expect(server.requestCount == 1)
    }

    /// RFC 9111 §4.4: an unsafe request's answer invalidates its same-origin `Location`. Courier
    /// follows a redirect itself, so the cache saw only the last hop's answer: after a POST
    /// answered `303 See Other` to `/profile` (post-redirect-get), the stored `/profile` was
    /// still served, older than the page the redirect had just fetched.
    @Test func anUnsafeRequestRedirectedToAStoredURLInvalidatesIt() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let version = LockedValue(1)
        server.route("GET", "/profile") { _ in
            ScriptedResponse.text("profile \(version.withLock { $0 })").with(.cacheControl, "max-age=600")
        }
        server.route("POST", "/profile/update") { _ in
            version.withLock { $0 += 1 }
            return .redirect(to: "/profile", status: 303)
        }
        let (client, _) = try makeClient(server)
        func profile() async throws -> String {
            String(decoding: try await client.send(request("/profile")).body, as: UTF8.self)
        }
        #expect(try await profile() == "profile 1")
        #expect(try await profile() == "profile 1")
        let redirected = try await client.send(request("/profile/update", method: .post), body: .data(Data("x".utf8)))
        #expect(String(decoding: redirected.body, as: UTF8.self) == "profile 2")
        #expect(try await profile() == "profile 2")
    }
}
