import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// RFC 9111 §3: what a private cache may store.
@Suite struct CacheStorabilityTests {
    let clock = ManualClock()

    @Test(arguments: [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501])
    func defaultStorableStatusesAreStored(status: Int) throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(cache.store(CacheFixtures.request(), CacheFixtures.response(status, ["Cache-Control": "max-age=60"])))
        let result = try cache.lookup(CacheFixtures.request())
        #expect(result.isFresh)
        #expect(result.cached?.response.status.code == status)
    }

    @Test(arguments: [201, 202, 206, 400, 401, 403, 500, 502, 503, 504])
    func otherStatusesAreNotStored(status: Int) throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(!cache.store(CacheFixtures.request(), CacheFixtures.response(status, ["Cache-Control": "max-age=60"])))
        #expect(try cache.lookup(CacheFixtures.request()).isMiss)
    }

    @Test(arguments: [302, 307])
    func temporaryRedirectsNeedExplicitFreshness(status: Int) throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(!cache.store(CacheFixtures.request("/a"), CacheFixtures.response(status, ["Location": "/b"])))
        #expect(
            !cache.store(
                CacheFixtures.request("/a"),
                CacheFixtures.response(status, ["Last-Modified": HTTPDateFormat.format(clock.now)])))
        #expect(
            cache.store(CacheFixtures.request("/b"), CacheFixtures.response(status, ["Cache-Control": "max-age=9"])))
        #expect(
            cache.store(
                CacheFixtures.request("/c"),
                CacheFixtures.response(
                    status,
                    ["Expires": HTTPDateFormat.format(clock.now + 60), "Date": HTTPDateFormat.format(clock.now)])))
        #expect(cache.store(CacheFixtures.request("/d"), CacheFixtures.response(status, ["Cache-Control": "private"])))
        #expect(cache.store(CacheFixtures.request("/e"), CacheFixtures.response(status, ["Cache-Control": "public"])))
        #expect(try cache.lookup(CacheFixtures.request("/a")).isMiss)
        #expect(try cache.lookup(CacheFixtures.request("/b")).isFresh)
    }

    @Test(arguments: [HTTPRequest.Method.post, .put, .patch, .delete, .head, .options])
    func onlyGETIsStoredOrServed(method: HTTPRequest.Method) throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        let request = CacheFixtures.request(method: method)
        #expect(!cache.store(request, CacheFixtures.response(200, ["Cache-Control": "max-age=60"])))
        #expect(cache.store(CacheFixtures.request(), CacheFixtures.response(200, ["Cache-Control": "max-age=60"])))
        #expect(try cache.lookup(request).isMiss)
    }

    @Test func responseNoStoreIsNotStored() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(
            !cache.store(
                CacheFixtures.request(), CacheFixtures.response(200, ["Cache-Control": "max-age=60, no-store"])))
        #expect(try cache.lookup(CacheFixtures.request()).isMiss)
    }

    @Test func requestNoStoreIsNotStoredButMayBeServed() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        let noStore = CacheFixtures.request(headers: CacheFixtures.headers(["Cache-Control": "no-store"]))
        #expect(!cache.store(noStore, CacheFixtures.response(200, ["Cache-Control": "max-age=60"])))
        #expect(try cache.lookup(CacheFixtures.request()).isMiss)
        // An entry stored by another request can still answer it (RFC 9111 §5.2.1.5).
        cache.store(CacheFixtures.request(), CacheFixtures.response(200, ["Cache-Control": "max-age=60"]))
        #expect(try cache.lookup(noStore).isFresh)
    }

    @Test func varyStarIsNotStored() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(
            !cache.store(
                CacheFixtures.request(), CacheFixtures.response(200, ["Cache-Control": "max-age=60", "Vary": "*"])))
        #expect(
            !cache.store(
                CacheFixtures.request(),
                CacheFixtures.response(200, ["Cache-Control": "max-age=60", "Vary": "Accept, *"])))
    }

    @Test func bodyIsStoredOnlyWhenReceivedWhole() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(
            !cache.store(
                CacheFixtures.request(), CacheFixtures.response(200, ["Cache-Control": "max-age=60"]), whole: false))
        #expect(try cache.lookup(CacheFixtures.request()).isMiss)
    }

    @Test func bodiesOverTheEntryLimitAreNotStored() throws {
        let cache = try HostScopedCache(
            configuration: .init(
                rules: [CacheRule(CacheFixtures.host, .followHTTP)], storage: .memoryOnly, maxEntryBytes: 10,
                clock: clock.cacheClock))
        let response = CacheFixtures.response(200, ["Cache-Control": "max-age=60"])
        #expect(!cache.store(CacheFixtures.request(), response, body: "eleven byte"))
        #expect(cache.store(CacheFixtures.request(), response, body: "ten bytes!"))
    }

    @Test func setCookieAndHopByHopFieldsAreNotKept() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        // With a credential: an answer setting a cookie to a request without one is not stored
        // at all (`CacheIsolationTests.anAnswerThatStartsASessionIsNotServedToTheNextAnonymousCaller`).
        let request = CacheFixtures.request(headers: CacheFixtures.headers(["Authorization": "Bearer alice"]))
        cache.store(
            request,
            CacheFixtures.response(
                200,
                [
                    "Cache-Control": "max-age=60", "Set-Cookie": "session=secret", "Connection": "X-Hop", "X-Hop": "1",
                    "Keep-Alive": "timeout=5", "X-Kept": "yes",
                ]))
        let fields = try #require(try cache.lookup(request).cached).response.headerFields
        #expect(fields[.setCookie] == nil)
        #expect(fields[HTTPField.Name("X-Hop")!] == nil)
        #expect(fields[CacheFieldName.keepAlive] == nil)
        #expect(fields[HTTPField.Name("X-Kept")!] == "yes")
    }

    @Test func unsafeMethodsInvalidateTheURLForEveryIdentity() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        let alice = CacheFixtures.headers(["Authorization": "Bearer alice"])
        for method in [HTTPRequest.Method.post, .put, .patch, .delete] {
            cache.store(CacheFixtures.request("/items"), CacheFixtures.response(200, ["Cache-Control": "max-age=60"]))
            cache.store(
                CacheFixtures.request("/items", headers: alice),
                CacheFixtures.response(200, ["Cache-Control": "max-age=60"]))
            cache.store(CacheFixtures.request("/other"), CacheFixtures.response(200, ["Cache-Control": "max-age=60"]))
            #expect(
                cache.invalidate(
                    after: CacheFixtures.request("/items", method: method), response: CacheFixtures.response(204)) == 2)
            #expect(try cache.lookup(CacheFixtures.request("/items")).isMiss)
            #expect(try cache.lookup(CacheFixtures.request("/items", headers: alice)).isMiss)
            #expect(try cache.lookup(CacheFixtures.request("/other")).isFresh)
        }
        cache.store(CacheFixtures.request("/items"), CacheFixtures.response(200, ["Cache-Control": "max-age=60"]))
        #expect(cache.invalidate(after: CacheFixtures.request("/items"), response: CacheFixtures.response(200)) == 0)
        #expect(try cache.lookup(CacheFixtures.request("/items")).isFresh)
    }

    @Test func unsafeMethodsInvalidateSameOriginLocation() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(CacheFixtures.request("/items/7"), CacheFixtures.response(200, ["Cache-Control": "max-age=60"]))
        cache.store(CacheFixtures.request("/items/8"), CacheFixtures.response(200, ["Cache-Control": "max-age=60"]))
        cache.invalidate(
            after: CacheFixtures.request("/items", method: .post),
            response: CacheFixtures.response(
                201, ["Location": "/items/7", "Content-Location": "https://api.example.com/items/8"]))
        #expect(try cache.lookup(CacheFixtures.request("/items/7")).isMiss)
        #expect(try cache.lookup(CacheFixtures.request("/items/8")).isMiss)
    }

    @Test func invalidateByURLNormalizesSchemeAndHost() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(CacheFixtures.request("/a?x=1"), CacheFixtures.response(200, ["Cache-Control": "max-age=60"]))
        #expect(cache.invalidate(url: "HTTPS://API.example.com/a?x=1#frag") == 1)
        #expect(try cache.lookup(CacheFixtures.request("/a?x=1")).isMiss)
    }

    /// RFC 9111 §4.4: `Location` and `Content-Location` are URI references, resolved against the
    /// target URI, and same-origin ones are invalidated. Only a path starting with `/` or an
    /// absolute URL written with the request's exact authority were: a relative path (`8`), a
    /// network-path reference (`//api.example.com/…`) and the default port written out (`:443`)
    /// left the entry to be served after the write.
    @Test func unsafeMethodsInvalidateLocationsWrittenInAnyFormOfTheSameOrigin() throws {
        let cache = try CacheFixtures.memoryCache(
            clock: clock, rules: [CacheRule(CacheFixtures.host, .followHTTP), CacheRule("other.example", .followHTTP)])
        let maxAge = CacheFixtures.response(200, ["Cache-Control": "max-age=60"])
        let paths = ["/items/7", "/items/8", "/items/9"]
        for path in paths { cache.store(CacheFixtures.request(path), maxAge) }
        cache.store(CacheFixtures.request("/items/10", host: "other.example"), maxAge)
        cache.invalidate(
            after: CacheFixtures.request("/items/", method: .post),
            response: CacheFixtures.response(
                201, ["Location": "https://api.example.com:443/items/7", "Content-Location": "8"]))
        cache.invalidate(
            after: CacheFixtures.request("/items/", method: .put),
            response: CacheFixtures.response(
                200, ["Location": "//api.example.com/items/9", "Content-Location": "https://other.example/items/10"]))
        for path in paths { #expect(try cache.lookup(CacheFixtures.request(path)).isMiss, "\(path)") }
        // Another origin's entry is left alone.
        #expect(try cache.lookup(CacheFixtures.request("/items/10", host: "other.example")).isFresh)
    }
}
