import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Host rules, per-call policies and lifetimes, Vary, stale-if-error, statistics and events.
@Suite struct CachePolicyTests {
    let clock = ManualClock()
    let maxAge60 = CacheFixtures.response(200, ["Cache-Control": "max-age=60"])

    @Test func hostRulesExactSuffixNeverAndDefault() throws {
        let cache = try CacheFixtures.memoryCache(
            clock: clock,
            rules: [
                CacheRule("api.example.com", .followHTTP),
                CacheRule(".cdn.example.com", .forceLifetime(.seconds(3600))),
                CacheRule("pay.example.com", .never), CacheRule(".example.com", .never),
                CacheRule("special.cdn.example.com", .never),
            ])
        let noHeaders = CacheFixtures.response(200)
        #expect(cache.store(CacheFixtures.request(host: "api.example.com"), maxAge60))
        #expect(cache.store(CacheFixtures.request(host: "img.cdn.example.com"), noHeaders))
        #expect(cache.store(CacheFixtures.request(host: "CDN.example.com:8443"), noHeaders))
        #expect(!cache.store(CacheFixtures.request(host: "pay.example.com"), maxAge60))
        #expect(!cache.store(CacheFixtures.request(host: "www.example.com"), maxAge60))
        #expect(!cache.store(CacheFixtures.request(host: "special.cdn.example.com"), noHeaders))
        #expect(!cache.store(CacheFixtures.request(host: "other.org"), maxAge60))
        #expect(!cache.store(CacheFixtures.request(host: "notcdn.example.com"), noHeaders))
        clock.advance(3000)
        #expect(try cache.lookup(CacheFixtures.request(host: "img.cdn.example.com")).isFresh)
        #expect(try cache.lookup(CacheFixtures.request(host: "api.example.com")).isStale)
        #expect(try cache.lookup(CacheFixtures.request(host: "pay.example.com")).isMiss)
    }

    @Test func defaultPolicyAppliesToUnmatchedHosts() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock, rules: [], defaultPolicy: .followHTTP)
        #expect(cache.store(CacheFixtures.request(host: "anything.org"), maxAge60))
        #expect(try cache.lookup(CacheFixtures.request(host: "anything.org")).isFresh)
    }

    @Test func forcedLifetimeOverridesResponseHeaders() throws {
        let cache = try CacheFixtures.memoryCache(
            clock: clock, rules: [CacheRule(".cdn.example.com", .forceLifetime(.seconds(31_536_000)))])
        let request = CacheFixtures.request(host: "a.cdn.example.com")
        #expect(cache.store(request, CacheFixtures.response(200, ["Cache-Control": "no-store, no-cache, max-age=0"])))
        clock.advance(364 * 86_400)
        #expect(try cache.lookup(request).isFresh)
        clock.advance(2 * 86_400)
        #expect(try cache.lookup(request).isStale)
    }

    @Test func perCallLifetime() throws {
        let cache = try CacheFixtures.memoryCache(
            clock: clock, rules: [CacheRule(CacheFixtures.host, .followHTTP), CacheRule("pay.example.com", .never)])
        #expect(cache.store(CacheFixtures.request(), CacheFixtures.response(200), lifetime: .seconds(180)))
        clock.advance(179)
        #expect(try cache.lookup(CacheFixtures.request(), lifetime: .seconds(180)).isFresh)
        clock.advance(2)
        #expect(try cache.lookup(CacheFixtures.request(), lifetime: .seconds(180)).isStale)
        // It lifts the default "never" of unmatched hosts, not an explicit never rule.
        #expect(
            cache.store(CacheFixtures.request(host: "other.org"), CacheFixtures.response(200), lifetime: .seconds(180)))
        #expect(
            !cache.store(
                CacheFixtures.request(host: "pay.example.com"), CacheFixtures.response(200), lifetime: .seconds(180)))
    }

    @Test func reloadIgnoringCacheGoesToNetworkAndStillStores() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(CacheFixtures.request(), maxAge60, body: "old")
        #expect(try cache.lookup(CacheFixtures.request(), policy: .reloadIgnoringCache).isMiss)
        #expect(cache.store(CacheFixtures.request(), maxAge60, body: "new", policy: .reloadIgnoringCache))
        #expect(try cache.lookup(CacheFixtures.request()).bodyString == "new")
    }

    @Test func returnCacheDataElseLoadServesStaleEntries() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(try cache.lookup(CacheFixtures.request(), policy: .returnCacheDataElseLoad).isMiss)
        cache.store(CacheFixtures.request(), maxAge60)
        clock.advance(3600)
        let result = try cache.lookup(CacheFixtures.request(), policy: .returnCacheDataElseLoad)
        #expect(result.isFresh)
        #expect(result.cached?.isStale == true)
        #expect(result.cached?.isFromCache == true)
    }

    @Test func returnCacheDataDontLoadThrowsNotCachedOnMiss() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        let error = #expect(throws: CourierError.self) {
            try cache.lookup(CacheFixtures.request(), policy: .returnCacheDataDontLoad)
        }
        #expect(error?.code == .notCached)
        // Also for hosts the cache never covers.
        #expect(throws: CourierError.self) {
            try cache.lookup(CacheFixtures.request(host: "never.org"), policy: .returnCacheDataDontLoad)
        }
        cache.store(CacheFixtures.request(), maxAge60)
        clock.advance(3600)
        #expect(try cache.lookup(CacheFixtures.request(), policy: .returnCacheDataDontLoad).cached?.isStale == true)
    }

    @Test func reloadRevalidatingCacheRevalidatesFreshEntries() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(
            CacheFixtures.request(), CacheFixtures.response(200, ["Cache-Control": "max-age=600", "ETag": "W/\"7\""]))
        let result = try cache.lookup(CacheFixtures.request(), policy: .reloadRevalidatingCache)
        #expect(result.conditionalHeaders?[.ifNoneMatch] == "W/\"7\"")
    }

    @Test func varySelectsTheMatchingVariant() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        let response = CacheFixtures.response(200, ["Cache-Control": "max-age=60", "Vary": "Accept-Language"])
        let english = CacheFixtures.request(headers: CacheFixtures.headers(["Accept-Language": "en"]))
        let french = CacheFixtures.request(headers: CacheFixtures.headers(["Accept-Language": "fr"]))
        #expect(cache.store(english, response, body: "hello"))
        #expect(try cache.lookup(english).bodyString == "hello")
        #expect(try cache.lookup(french).isMiss)
        #expect(try cache.lookup(CacheFixtures.request()).isMiss)
        #expect(cache.store(french, response, body: "bonjour"))
        #expect(try cache.lookup(french).bodyString == "bonjour")
        #expect(try cache.lookup(english).bodyString == "hello")
        // Whitespace differences in the request value still match.
        let spaced = CacheFixtures.request(headers: CacheFixtures.headers(["Accept-Language": "en"]))
        #expect(try cache.lookup(spaced).bodyString == "hello")
    }

    @Test(arguments: [false, true])
    func aChangedVaryReplacesTheOldVariants(onDisk: Bool) throws {
        let directory = TemporaryDirectory()
        let cache =
            onDisk
            ? try CacheFixtures.diskCache(clock: clock, directory: directory.path)
            : try CacheFixtures.memoryCache(clock: clock)
        let english = CacheFixtures.request(headers: CacheFixtures.headers(["Accept-Language": "en"]))
        let french = CacheFixtures.request(headers: CacheFixtures.headers(["Accept-Language": "fr"]))
        cache.store(
            english, CacheFixtures.response(200, ["Cache-Control": "max-age=60", "Vary": "Accept-Language"]),
            body: "old en")
        cache.store(french, CacheFixtures.response(200, ["Cache-Control": "max-age=60"]), body: "no vary")
        #expect(try cache.lookup(english).bodyString == "no vary")
        #expect(try cache.lookup(french).bodyString == "no vary")
        if onDisk {
            #expect(try cache.disk.withLock { tier throws(CourierError) in try tier!.rowCount() } == 1)
        }
    }

    @Test func staleIfErrorIsOptIn() throws {
        let off = try CacheFixtures.memoryCache(clock: clock)
        let on = try CacheFixtures.memoryCache(clock: clock, staleIfError: true)
        for cache in [off, on] { cache.store(CacheFixtures.request(), maxAge60, body: "offline copy") }
        clock.advance(600)
        let request = CacheRequest(CacheFixtures.request())
        let offEntry = try #require(try off.lookup(request).cached)
        let onEntry = try #require(try on.lookup(request).cached)
        #expect(off.staleFallback(request, cached: offEntry, status: nil) == nil)
        let served = try #require(on.staleFallback(request, cached: onEntry, status: nil))
        #expect(served.isStale)
        #expect(String(decoding: served.body, as: UTF8.self) == "offline copy")
        #expect(on.staleFallback(request, cached: onEntry, status: .serviceUnavailable) != nil)
        #expect(on.staleFallback(request, cached: onEntry, status: .notFound) == nil)
        // Per call.
        let perCall = CacheRequest(CacheFixtures.request(), staleIfError: true)
        #expect(off.staleFallback(perCall, cached: offEntry, status: .badGateway) != nil)
        #expect(on.statistics.staleServedOnError == 2)
    }

    @Test func staleIfErrorRespectsMustRevalidate() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock, staleIfError: true)
        cache.store(
            CacheFixtures.request(), CacheFixtures.response(200, ["Cache-Control": "max-age=1, must-revalidate"]))
        clock.advance(10)
        let request = CacheRequest(CacheFixtures.request())
        let entry = try #require(try cache.lookup(request).cached)
        #expect(cache.staleFallback(request, cached: entry, status: nil) == nil)
    }

    @Test func statisticsAndEvents() throws {
        let events = EventLog()
        let cache = try CacheFixtures.memoryCache(clock: clock, events: events)
        _ = try cache.lookup(CacheFixtures.request())
        cache.store(
            CacheFixtures.request(), CacheFixtures.response(200, ["Cache-Control": "max-age=60", "ETag": "\"1\""]))
        _ = try cache.lookup(CacheFixtures.request())
        clock.advance(120)
        _ = try cache.lookup(CacheFixtures.request())
        let stats = cache.statistics
        #expect(stats.misses == 1)
        #expect(stats.hits == 1)
        #expect(stats.revalidations == 1)
        #expect(stats.stores == 1)
        let url = "https://api.example.com/items"
        #expect(
            events.all == [
                .miss(url: url), .stored(url: url, bytes: 4), .hit(url: url, stale: false), .revalidate(url: url),
            ])
        // Queries (often tokens) never reach monitors or error messages.
        _ = try cache.lookup(CacheFixtures.request("/items?token=s3cret"))
        #expect(events.all.last == .miss(url: "https://api.example.com/items?<redacted>"))
        let error = #expect(throws: CourierError.self) {
            try cache.lookup(CacheFixtures.request("/items?token=s3cret"), policy: .returnCacheDataDontLoad)
        }
        #expect(error?.description.contains("s3cret") == false)
    }
}

extension CachedResponse: Equatable {
    public static func == (lhs: CachedResponse, rhs: CachedResponse) -> Bool {
        lhs.response == rhs.response && lhs.body == rhs.body && lhs.isStale == rhs.isStale
    }
}
