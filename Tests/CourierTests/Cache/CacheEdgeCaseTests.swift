import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Edge cases of RFC 9111 for a private cache that the rule-by-rule suites do not cover:
/// shared-cache directives, duplicated fields, Vary on absent fields, 304s that do not match,
/// stale-if-error limits, forced lifetimes and unsafe methods.
@Suite struct CacheEdgeCaseTests {
    let clock = ManualClock()

    /// Fields in the order given, with repeated names kept (the dictionary fixture cannot).
    func fields(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    func response(_ status: Int, _ pairs: [(String, String)]) -> HTTPResponse {
        HTTPResponse(status: .init(code: status), headerFields: fields(pairs))
    }

    func response(_ pairs: [(String, String)]) -> HTTPResponse { response(200, pairs) }

    @Test func sMaxAgeAndProxyRevalidateAreForSharedCaches() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(
            cache.store(
                CacheFixtures.request("/a"),
                response([("Cache-Control", "max-age=10, s-maxage=1000, proxy-revalidate")])))
        clock.advance(11)
        // s-maxage does not lengthen a private cache's freshness…
        #expect(try cache.lookup(CacheFixtures.request("/a")).isStale)
        // …and proxy-revalidate does not forbid serving it stale when the request allows it.
        let maxStale = CacheFixtures.request("/a", headers: [.cacheControl: "max-stale=60"])
        #expect(try cache.lookup(maxStale).isFresh)

        // s-maxage alone is no explicit freshness: stale at once, and a 302 is not stored.
        #expect(cache.store(CacheFixtures.request("/b"), response([("Cache-Control", "s-maxage=1000")])))
        #expect(try cache.lookup(CacheFixtures.request("/b")).isStale)
        #expect(!cache.store(CacheFixtures.request("/c"), response(302, [("Cache-Control", "s-maxage=1000")])))
    }

    @Test func everyCacheControlFieldCounts() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(
            !cache.store(
                CacheFixtures.request("/a"), response([("Cache-Control", "max-age=60"), ("Cache-Control", "no-store")]))
        )
        #expect(try cache.lookup(CacheFixtures.request("/a")).isMiss)
        cache.store(
            CacheFixtures.request("/b"),
            response([("Cache-Control", "max-age=60"), ("Cache-Control", "must-revalidate")]))
        clock.advance(61)
        #expect(try cache.lookup(CacheFixtures.request("/b", headers: [.cacheControl: "max-stale"])).isStale)
    }

    @Test func conflictingMaxAgesMakeTheResponseStaleButRepeatsDoNot() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(CacheFixtures.request("/conflict"), response([("Cache-Control", "max-age=600, max-age=60")]))
        cache.store(
            CacheFixtures.request("/two-fields"),
            response([("Cache-Control", "max-age=600"), ("Cache-Control", "max-age=60")]))
        cache.store(CacheFixtures.request("/repeat"), response([("Cache-Control", "max-age=60, max-age=60")]))
        #expect(try cache.lookup(CacheFixtures.request("/conflict")).isStale)
        #expect(try cache.lookup(CacheFixtures.request("/two-fields")).isStale)
        clock.advance(59)
        #expect(try cache.lookup(CacheFixtures.request("/repeat")).isFresh)
    }

    @Test func conflictingExpiresMeanExpired() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        let date = HTTPDateFormat.format(clock.now)
        let inAMinute = HTTPDateFormat.format(clock.now + 60)
        let inAnHour = HTTPDateFormat.format(clock.now + 3600)
        cache.store(
            CacheFixtures.request("/two"), response([("Date", date), ("Expires", inAnHour), ("Expires", inAMinute)]))
        cache.store(
            CacheFixtures.request("/same"), response([("Date", date), ("Expires", inAMinute), ("Expires", inAMinute)]))
        cache.store(CacheFixtures.request("/garbage"), response([("Date", date), ("Expires", "tomorrow")]))
        #expect(try cache.lookup(CacheFixtures.request("/two")).isStale)
        #expect(try cache.lookup(CacheFixtures.request("/garbage")).isStale)
        clock.advance(59)
        #expect(try cache.lookup(CacheFixtures.request("/same")).isFresh)
    }

    @Test func requestMaxAgeZeroRevalidatesAnyAgedEntry() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(CacheFixtures.request(), response([("Cache-Control", "max-age=600"), ("ETag", "\"1\"")]))
        clock.advance(1)
        let result = try cache.lookup(CacheFixtures.request(headers: [.cacheControl: "max-age=0"]))
        #expect(result.conditionalHeaders?[.ifNoneMatch] == "\"1\"")
        #expect(try cache.lookup(CacheFixtures.request()).isFresh)
    }

    @Test func varyOnAFieldTheRequestLackedMatchesOnlyRequestsLackingItToo() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        // Stored from a request without Accept-Language.
        #expect(
            cache.store(
                CacheFixtures.request(), response([("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")]),
                body: "default"))
        #expect(try cache.lookup(CacheFixtures.request()).bodyString == "default")
        #expect(try cache.lookup(CacheFixtures.request(headers: [.acceptLanguage: "fr"])).isMiss)
        // An empty value is a value, not an absent field.
        #expect(try cache.lookup(CacheFixtures.request(headers: [.acceptLanguage: ""])).isMiss)
        // Both variants then live side by side.
        cache.store(
            CacheFixtures.request(headers: [.acceptLanguage: "fr"]),
            response([("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")]), body: "français")
        #expect(try cache.lookup(CacheFixtures.request()).bodyString == "default")
        #expect(try cache.lookup(CacheFixtures.request(headers: [.acceptLanguage: "fr"])).bodyString == "français")
    }

    /// A 304 without `Date` or `Age` restarts the entry's age: the stored `Date` and `Age`
    /// described the first response, and kept as they were they made the refreshed entry stale
    /// again at once (Date 200 s old, max-age 100).
    @Test func aNotModifiedWithoutDateOrAgeRestartsTheAge() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(
            CacheFixtures.request(),
            response([
                ("Cache-Control", "max-age=100"), ("Date", HTTPDateFormat.format(clock.now)), ("Age", "50"),
                ("ETag", "\"1\""),
            ]))
        clock.advance(200)
        let cached = try #require(try cache.lookup(CacheFixtures.request()).cached)
        let merged = try #require(
            cache.merge304(
                CacheRequest(CacheFixtures.request()), cached: cached,
                notModified: response(304, [("Cache-Control", "max-age=100"), ("ETag", "\"1\"")]),
                requestTime: clock.now, responseTime: clock.now))
        #expect(merged.response.headerFields[.date] == HTTPDateFormat.format(clock.now))
        #expect(merged.response.headerFields[CacheFieldName.age] == "0")
        clock.advance(99)
        let again = try cache.lookup(CacheFixtures.request())
        #expect(again.isFresh)
        #expect(again.cached?.response.headerFields[CacheFieldName.age] == "99")
    }

    @Test func aNotModifiedNamingAnotherRepresentationUpdatesNothing() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        let lastModified = HTTPDateFormat.format(clock.now - 3600)
        cache.store(
            CacheFixtures.request("/etag"), response([("Cache-Control", "max-age=10"), ("ETag", "W/\"1\"")]),
            body: "one")
        cache.store(
            CacheFixtures.request("/date"),
            response([("Cache-Control", "max-age=10"), ("Last-Modified", lastModified)]),
            body: "one")
        clock.advance(20)
        func merge(_ path: String, _ notModified: HTTPResponse) throws -> CachedResponse? {
            let cached = try #require(try cache.lookup(CacheFixtures.request(path)).cached)
            return cache.merge304(
                CacheRequest(CacheFixtures.request(path)), cached: cached, notModified: notModified,
                requestTime: clock.now, responseTime: clock.now)
        }
        let newer = HTTPDateFormat.format(clock.now)
        #expect(try merge("/etag", response(304, [("Cache-Control", "max-age=600"), ("ETag", "\"2\"")])) == nil)
        #expect(try merge("/date", response(304, [("Cache-Control", "max-age=600"), ("Last-Modified", newer)])) == nil)
        #expect(try merge("/date", response(304, [("Cache-Control", "max-age=600"), ("ETag", "\"1\"")])) == nil)
        // Nothing was refreshed by them.
        #expect(try cache.lookup(CacheFixtures.request("/etag")).isStale)
        #expect(try cache.lookup(CacheFixtures.request("/date")).isStale)
        #expect(cache.statistics.notModified == 0)
        // The same ETag, weak or strong, and the same date do refresh.
        #expect(try merge("/etag", response(304, [("Cache-Control", "max-age=600"), ("ETag", "\"1\"")])) != nil)
        #expect(
            try merge("/date", response(304, [("Cache-Control", "max-age=600"), ("Last-Modified", lastModified)]))
                != nil)
        #expect(try cache.lookup(CacheFixtures.request("/etag")).isFresh)
        #expect(try cache.lookup(CacheFixtures.request("/date")).isFresh)
    }

    @Test func staleIfErrorNeverServesWhatMustBeRevalidated() throws {
        let cache = try CacheFixtures.memoryCache(
            clock: clock,
            rules: [
                CacheRule(CacheFixtures.host, .followHTTP), CacheRule("cdn.example.com", .forceLifetime(.seconds(5))),
            ],
            staleIfError: true)
        cache.store(CacheFixtures.request("/no-cache"), response([("Cache-Control", "no-cache"), ("ETag", "\"1\"")]))
        cache.store(CacheFixtures.request("/plain"), response([("Cache-Control", "max-age=1"), ("ETag", "\"1\"")]))
        cache.store(
            CacheFixtures.request("/forced", host: "cdn.example.com"),
            response([("Cache-Control", "no-cache, must-revalidate")]))
        clock.advance(10)
        func fallback(_ request: HTTPRequest) throws -> CachedResponse? {
            let call = CacheRequest(request)
            let cached = try #require(try cache.lookup(call).cached)
            return cache.staleFallback(call, cached: cached, status: .badGateway)
        }
        #expect(try fallback(CacheFixtures.request("/no-cache")) == nil)
        #expect(try fallback(CacheFixtures.request("/plain")) != nil)
        // A lifetime forced by the host rule overrides the response's directives.
        #expect(try fallback(CacheFixtures.request("/forced", host: "cdn.example.com")) != nil)
    }

    @Test func statusesOutsideTheListAreNotStoredEvenWithAForcedLifetime() throws {
        let cache = try CacheFixtures.memoryCache(
            clock: clock, rules: [CacheRule(CacheFixtures.host, .forceLifetime(.seconds(3600)))])
        for status in [206, 500, 201] {
            #expect(
                !cache.store(
                    CacheFixtures.request("/\(status)"), response(status, [("Content-Range", "bytes 0-9/100")])))
            #expect(try cache.lookup(CacheFixtures.request("/\(status)")).isMiss)
        }
        // 302 and 307 are, since the lifetime is explicit.
        #expect(cache.store(CacheFixtures.request("/302"), response(302, [("Location", "/b")])))
    }

    @Test func aForcedLifetimeStillKeepsEachUsersEntriesApart() throws {
        let cache = try CacheFixtures.memoryCache(
            clock: clock, rules: [CacheRule(".cdn.example.com", .forceLifetime(.seconds(31_536_000)))])
        func request(_ token: String?) -> HTTPRequest {
            CacheFixtures.request(
                "/avatar", host: "img.cdn.example.com", headers: token.map { [.authorization: "Bearer \($0)"] } ?? [:])
        }
        #expect(cache.store(request("alice"), response([("Cache-Control", "no-store")]), body: "alice"))
        #expect(try cache.lookup(request("alice")).bodyString == "alice")
        #expect(try cache.lookup(request("bob")).isMiss)
        #expect(try cache.lookup(request(nil)).isMiss)
        #expect(cache.purge(identity: CacheIdentity(credentialsIn: [.authorization: "Bearer alice"])) == 1)
        #expect(try cache.lookup(request("alice")).isMiss)
    }

    @Test func aNewerResponseThatCannotBeStoredDropsTheOlderOne() throws {
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(CacheFixtures.host, .followHTTP)], storage: .memoryOnly, maxEntryBytes: 10,
                clock: clock.cacheClock))
        let maxAge = response([("Cache-Control", "max-age=600")])
        #expect(cache.store(CacheFixtures.request("/big"), maxAge, body: "small"))
        #expect(cache.store(CacheFixtures.request("/secret"), maxAge, body: "old"))
        // A reload brings bigger or no-store answers: the old ones must not be served after them.
        #expect(!cache.store(CacheFixtures.request("/big"), maxAge, body: "eleven byte", policy: .reloadIgnoringCache))
        #expect(
            !cache.store(
                CacheFixtures.request("/secret"), response([("Cache-Control", "no-store")]), body: "new",
                policy: .reloadIgnoringCache))
        #expect(try cache.lookup(CacheFixtures.request("/big")).isMiss)
        #expect(try cache.lookup(CacheFixtures.request("/secret")).isMiss)
        // A big 5xx is no newer version of the resource: the entry stays for stale-if-error.
        #expect(cache.store(CacheFixtures.request("/big"), maxAge, body: "small"))
        #expect(!cache.store(CacheFixtures.request("/big"), response(503, []), body: "eleven byte"))
        #expect(try cache.lookup(CacheFixtures.request("/big")).bodyString == "small")
        // A transfer cut short says nothing about the resource: the stored entry stays.
        #expect(cache.store(CacheFixtures.request("/big"), maxAge, body: "small"))
        #expect(!cache.store(CacheFixtures.request("/big"), maxAge, body: "eleven byte", whole: false))
        #expect(try cache.lookup(CacheFixtures.request("/big")).bodyString == "small")
    }

    /// `Vary: *` is never stored (RFC 9111 §4.1: no later request matches it), but it is a newer
    /// whole answer all the same: the entry it could not replace must not be served after it
    /// (the stored "old" came back fresh to the next call after a reload brought "new").
    @Test func aNewerVaryStarResponseDropsTheOlderOne() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(cache.store(CacheFixtures.request("/a"), response([("Cache-Control", "max-age=600")]), body: "old"))
        #expect(
            !cache.store(
                CacheFixtures.request("/a"), response([("Cache-Control", "max-age=600"), ("Vary", "Accept, *")]),
                body: "new", policy: .reloadIgnoringCache))
        #expect(try cache.lookup(CacheFixtures.request("/a")).isMiss)
    }

    @Test func unsafeAndUnknownMethodsInvalidateSafeOnesDoNot() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        let maxAge = response([("Cache-Control", "max-age=600")])
        for method in ["HEAD", "OPTIONS", "TRACE", "GET"] {
            cache.store(CacheFixtures.request(), maxAge)
            let request = CacheFixtures.request(method: HTTPRequest.Method(method)!)
            #expect(cache.invalidate(after: request, response: response(200, [])) == 0, "\(method)")
            #expect(try cache.lookup(CacheFixtures.request()).isFresh, "\(method)")
        }
        for method in ["PURGE", "MKCOL", "POST"] {
            cache.store(CacheFixtures.request(), maxAge)
            let request = CacheFixtures.request(method: HTTPRequest.Method(method)!)
            #expect(cache.invalidate(after: request, response: nil) == 1, "\(method)")
            #expect(try cache.lookup(CacheFixtures.request()).isMiss, "\(method)")
        }
    }

    @Test func anUnsafeRequestThatFailedStillInvalidates() async throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(CacheFixtures.request(), response([("Cache-Control", "max-age=600")]))
        // The connection broke after the request went out: the server may have applied it.
        await #expect(throws: CourierError.self) {
            try await cache.load(CacheRequest(CacheFixtures.request(method: .put))) { _ in
                throw CourierError(.transport, "connection reset")
            }
        }
        #expect(try cache.lookup(CacheFixtures.request()).isMiss)
    }

    /// RFC 9111 §4.2.2: a heuristic lifetime only for heuristically cacheable statuses or answers
    /// marked `public`. A 302 stored for its `private` directive (ASP.NET writes one on every
    /// redirect) got 10% of its `Last-Modified` age: a temporary redirect served for days.
    @Test func aTemporaryRedirectKeptForItsPrivateDirectiveGetsNoHeuristicFreshness() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        let dated = [
            ("Date", HTTPDateFormat.format(clock.now)), ("Last-Modified", HTTPDateFormat.format(clock.now - 864_000)),
            ("Location", "/elsewhere"),
        ]
        #expect(cache.store(CacheFixtures.request("/private"), response(302, [("Cache-Control", "private")] + dated)))
        #expect(cache.store(CacheFixtures.request("/public"), response(302, [("Cache-Control", "public")] + dated)))
        #expect(cache.store(CacheFixtures.request("/ok"), response(200, [("Cache-Control", "private")] + dated)))
        clock.advance(60)
        #expect(try cache.lookup(CacheFixtures.request("/private")).isStale)
        // `public` allows a heuristic, and a 200 is heuristically cacheable: a tenth of ten days.
        #expect(try cache.lookup(CacheFixtures.request("/public")).isFresh)
        #expect(try cache.lookup(CacheFixtures.request("/ok")).isFresh)
    }

    /// RFC 9111 §3.2: a 304 does not rewrite the fields that describe the stored bytes. Its
    /// `Content-Range` was added to the stored 200, whose body is the whole representation.
    @Test func aNotModifiedDoesNotAddAContentRangeToTheStoredAnswer() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(CacheFixtures.request("/a"), response([("Cache-Control", "max-age=10"), ("ETag", "\"v1\"")]))
        clock.advance(20)
        guard case .stale(let cached, _) = try cache.lookup(CacheFixtures.request("/a")) else {
            Issue.record("expected a stale entry")
            return
        }
        let notModified = response(
            304, [("Cache-Control", "max-age=100"), ("ETag", "\"v1\""), ("Content-Range", "bytes 0-1/10")])
        let merged = try #require(
            cache.merge304(
                CacheRequest(CacheFixtures.request("/a")), cached: cached, notModified: notModified,
                requestTime: clock.now, responseTime: clock.now))
        #expect(merged.response.headerFields[.contentRange] == nil)
        #expect(try cache.lookup(CacheFixtures.request("/a")).cached?.response.headerFields[.contentRange] == nil)
    }

    /// RFC 9111 §4.4: an unsafe request invalidates its target URI. A URL with a credential's
    /// query part (`CredentialPart.query`) is stored with that value as a keyed digest, and the
    /// invalidation looked for the value in clear: the GET's entry outlived the POST.
    @Test func anUnsafeRequestInvalidatesAURLCarryingACredentialQueryPart() async throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        var get = CacheRequest(CacheFixtures.request("/items?device=d1"))
        get.secretQueryNames = ["device"]
        #expect(
            cache.store(
                get, response: response([("Cache-Control", "max-age=600")]), body: Data("old".utf8),
                receivedWhole: true,
                requestTime: clock.now, responseTime: clock.now))
        #expect(try cache.lookup(get).isFresh)
        var post = CacheRequest(CacheFixtures.request("/items?device=d1", method: .post))
        post.secretQueryNames = ["device"]
        _ = try await cache.load(post) { _ in CacheTransportResponse(response: response(201, []), body: Data()) }
        #expect(try cache.lookup(get).isMiss)
    }

    /// An answer that sets a cookie for an anonymous request is never stored (the session would
    /// go to every other caller), but it is a newer whole answer all the same: the entry it
    /// could not replace was served after it (a reload brought "new", the next call got "old").
    @Test func aNewerAnswerSettingACookieForAnAnonymousRequestDropsTheOlderOne() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(cache.store(CacheFixtures.request("/a"), response([("Cache-Control", "max-age=600")]), body: "old"))
        #expect(
            !cache.store(
                CacheFixtures.request("/a"), response([("Cache-Control", "max-age=600"), ("Set-Cookie", "s=1")]),
                body: "new", policy: .reloadIgnoringCache))
        #expect(try cache.lookup(CacheFixtures.request("/a")).isMiss)
    }
}
