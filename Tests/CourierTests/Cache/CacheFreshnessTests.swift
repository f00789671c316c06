import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// RFC 9111 §4.2: freshness lifetime, age, and the request's freshness directives.
@Suite struct CacheFreshnessTests {
    let clock = ManualClock()

    private func cacheAfterStoring(_ headers: [String: String], path: String = "/items") throws -> HostScopedCache {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(cache.store(CacheFixtures.request(path), CacheFixtures.response(200, headers)))
        return cache
    }

    private func lookup(_ cache: HostScopedCache, path: String = "/items", _ headers: [String: String] = [:]) throws
        -> CacheLookupResult
    {
        try cache.lookup(CacheFixtures.request(path, headers: CacheFixtures.headers(headers)))
    }

    @Test func maxAgeDecidesFreshness() throws {
        let cache = try cacheAfterStoring(["Cache-Control": "max-age=60"])
        clock.advance(59)
        #expect(try lookup(cache).isFresh)
        clock.advance(2)
        #expect(try lookup(cache).isStale)
    }

    @Test func maxAgeWinsOverExpires() throws {
        let cache = try cacheAfterStoring([
            "Cache-Control": "max-age=10", "Date": HTTPDateFormat.format(clock.now),
            "Expires": HTTPDateFormat.format(clock.now + 1000),
        ])
        clock.advance(11)
        #expect(try lookup(cache).isStale)
    }

    @Test func expiresMinusDate() throws {
        // The server's clock is ahead of ours: only Expires − Date counts, not Expires − now.
        let serverNow = clock.now + 3600
        let cache = try cacheAfterStoring([
            "Date": HTTPDateFormat.format(serverNow), "Expires": HTTPDateFormat.format(serverNow + 100),
        ])
        clock.advance(99)
        #expect(try lookup(cache).isFresh)
        clock.advance(2)
        #expect(try lookup(cache).isStale)
    }

    @Test func invalidExpiresMeansExpired() throws {
        let cache = try cacheAfterStoring(["Date": HTTPDateFormat.format(clock.now), "Expires": "0"])
        #expect(try lookup(cache).isStale)
    }

    @Test func heuristicIsTenPercentOfDateMinusLastModified() throws {
        let cache = try cacheAfterStoring([
            "Date": HTTPDateFormat.format(clock.now), "Last-Modified": HTTPDateFormat.format(clock.now - 1000),
        ])
        clock.advance(99)
        #expect(try lookup(cache).isFresh)
        clock.advance(2)
        #expect(try lookup(cache).isStale)
    }

    @Test func noHeuristicFreshnessForURLsWithAQuery() throws {
        let cache = try cacheAfterStoring(
            ["Date": HTTPDateFormat.format(clock.now), "Last-Modified": HTTPDateFormat.format(clock.now - 1000)],
            path: "/items?page=2")
        #expect(try lookup(cache, path: "/items?page=2").isStale)
    }

    @Test func ageFieldCountsTowardsAge() throws {
        let cache = try cacheAfterStoring(["Cache-Control": "max-age=100", "Age": "60"])
        clock.advance(39)
        let result = try lookup(cache)
        #expect(result.isFresh)
        #expect(result.cached?.response.headerFields[CacheFieldName.age] == "99")
        clock.advance(2)
        #expect(try lookup(cache).isStale)
    }

    @Test func apparentAgeFromDateCounts() throws {
        let cache = try cacheAfterStoring([
            "Cache-Control": "max-age=100", "Date": HTTPDateFormat.format(clock.now - 30),
        ])
        clock.advance(69)
        #expect(try lookup(cache).isFresh)
        clock.advance(2)
        #expect(try lookup(cache).isStale)
    }

    @Test func responseDelayCountsTowardsAge() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(
            CacheRequest(CacheFixtures.request()),
            response: CacheFixtures.response(200, ["Cache-Control": "max-age=100", "Age": "10"]),
            body: Data(), receivedWhole: true, requestTime: clock.now - 20, responseTime: clock.now)
        // corrected initial age = 10 + 20 = 30
        clock.advance(69)
        #expect(try lookup(cache).isFresh)
        clock.advance(2)
        #expect(try lookup(cache).isStale)
    }

    @Test func requestMaxAge() throws {
        let cache = try cacheAfterStoring(["Cache-Control": "max-age=100"])
        clock.advance(50)
        #expect(try lookup(cache, ["Cache-Control": "max-age=30"]).isStale)
        #expect(try lookup(cache, ["Cache-Control": "max-age=60"]).isFresh)
    }

    @Test func requestMinFresh() throws {
        let cache = try cacheAfterStoring(["Cache-Control": "max-age=100"])
        clock.advance(50)
        #expect(try lookup(cache, ["Cache-Control": "min-fresh=60"]).isStale)
        #expect(try lookup(cache, ["Cache-Control": "min-fresh=40"]).isFresh)
    }

    @Test func requestMaxStale() throws {
        let cache = try cacheAfterStoring(["Cache-Control": "max-age=100"])
        clock.advance(150)
        let within = try lookup(cache, ["Cache-Control": "max-stale=60"])
        #expect(within.isFresh)
        #expect(within.cached?.isStale == true)
        #expect(try lookup(cache, ["Cache-Control": "max-stale=30"]).isStale)
        #expect(try lookup(cache, ["Cache-Control": "max-stale"]).isFresh)
    }

    @Test func mustRevalidateIgnoresMaxStale() throws {
        let cache = try cacheAfterStoring(["Cache-Control": "max-age=100, must-revalidate"])
        clock.advance(150)
        #expect(try lookup(cache, ["Cache-Control": "max-stale"]).isStale)
    }

    @Test func responseNoCacheIsStoredButAlwaysRevalidated() throws {
        let cache = try cacheAfterStoring(["Cache-Control": "no-cache, max-age=1000", "ETag": "\"v1\""])
        let result = try lookup(cache)
        #expect(result.isStale)
        #expect(result.conditionalHeaders?[.ifNoneMatch] == "\"v1\"")
        #expect(try lookup(cache, ["Cache-Control": "max-stale"]).isStale)
    }

    @Test func requestNoCacheGoesToTheNetwork() throws {
        let cache = try cacheAfterStoring(["Cache-Control": "max-age=1000"])
        #expect(try lookup(cache, ["Cache-Control": "no-cache"]).isMiss)
        #expect(try lookup(cache, ["Pragma": "no-cache"]).isMiss)
        #expect(try lookup(cache).isFresh)
    }

    @Test func onlyIfCachedWithoutUsableEntryIsNotCached() throws {
        let cache = try cacheAfterStoring(["Cache-Control": "max-age=10"])
        #expect(try lookup(cache, ["Cache-Control": "only-if-cached"]).isFresh)
        clock.advance(20)
        let error = #expect(throws: CourierError.self) { try lookup(cache, ["Cache-Control": "only-if-cached"]) }
        #expect(error?.code == .notCached)
    }

    @Test func conditionalHeadersPreferETag() throws {
        let lastModified = HTTPDateFormat.format(clock.now - 500)
        let both = try cacheAfterStoring([
            "ETag": "\"abc\"", "Last-Modified": lastModified, "Cache-Control": "max-age=0",
        ])
        let headers = try #require(try lookup(both).conditionalHeaders)
        #expect(headers[.ifNoneMatch] == "\"abc\"")
        #expect(headers[.ifModifiedSince] == nil)

        let onlyDate = try cacheAfterStoring(["Last-Modified": lastModified, "Cache-Control": "max-age=0"])
        let dateHeaders = try #require(try lookup(onlyDate).conditionalHeaders)
        #expect(dateHeaders[.ifModifiedSince] == lastModified)
        #expect(dateHeaders[.ifNoneMatch] == nil)

        let neither = try cacheAfterStoring(["Cache-Control": "max-age=0"])
        #expect(try lookup(neither).conditionalHeaders?.isEmpty == true)
    }

    @Test func notModifiedMergesHeadersAndKeepsTheBody() throws {
        let cache = try CacheFixtures.memoryCache(clock: clock)
        cache.store(
            CacheFixtures.request(),
            CacheFixtures.response(
                200,
                [
                    "Cache-Control": "max-age=10", "ETag": "\"v1\"", "Content-Type": "application/json",
                    "Content-Length": "9",
                    "X-Old": "old",
                ]),
            body: "{\"a\": 1}")
        clock.advance(20)
        guard case .stale(let cached, _) = try lookup(cache) else {
            Issue.record("expected a stale entry")
            return
        }
        let notModified = CacheFixtures.response(
            304,
            [
                "Cache-Control": "max-age=100", "ETag": "\"v1\"", "Content-Type": "text/plain", "Content-Length": "0",
                "Content-Encoding": "gzip", "Connection": "close", "X-Old": "new",
            ])
        let merged = try #require(
            cache.merge304(
                CacheRequest(CacheFixtures.request()), cached: cached, notModified: notModified,
                requestTime: clock.now, responseTime: clock.now))
        #expect(String(decoding: merged.body, as: UTF8.self) == "{\"a\": 1}")
        #expect(merged.response.status.code == 200)
        #expect(merged.response.headerFields[.contentType] == "application/json")
        #expect(merged.response.headerFields[.contentLength] == "9")
        #expect(merged.response.headerFields[.contentEncoding] == nil)
        #expect(merged.response.headerFields[.connection] == nil)
        #expect(merged.response.headerFields[values: HTTPField.Name("X-Old")!] == ["new"])
        #expect(!merged.isStale)
        // The stored entry was updated: fresh for the new max-age from the 304.
        clock.advance(90)
        let again = try lookup(cache)
        #expect(again.isFresh)
        #expect(again.cached?.response.headerFields[.cacheControl] == "max-age=100")
        #expect(cache.statistics.notModified == 1)
    }

    @Test func httpDatesParseInAllThreeForms() {
        let expected = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDateFormat.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDateFormat.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(HTTPDateFormat.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDateFormat.format(expected) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDateFormat.parse("yesterday") == nil)
        #expect(HTTPDateFormat.parse("Sun, 32 Nov 1994 08:49:37 GMT") == nil)
    }

    @Test func cacheControlParsing() {
        let control = CacheControl(
            CacheFixtures.headers(["Cache-Control": "max-age=\"30\", no-cache=\"Set-Cookie, X\", private"]))
        #expect(control.maxAge == 30)
        #expect(control.noCache)
        #expect(control.isPrivate)
        #expect(!control.noStore)
        let bad = CacheControl(CacheFixtures.headers(["Cache-Control": "max-age=soon"]))
        #expect(bad.maxAge == 0)
    }

    /// RFC 9111 §1.2.2: a delta-seconds value past the largest integer is 2³¹, not invalid.
    /// Before, it read as 0: a server's "cache for ever" was stale at once, and a request's
    /// `min-fresh` past the largest integer accepted any fresh entry.
    @Test func deltaSecondsPastTheLargestIntegerAreTwoToThe31() throws {
        let huge = "99999999999999999999999"
        let control = CacheControl(
            CacheFixtures.headers(["Cache-Control": "max-age=\(huge), max-stale=\(huge), min-fresh=\(huge)"]))
        #expect(control.maxAge == 2_147_483_648)
        #expect(control.maxStale == 2_147_483_648)
        #expect(control.minFresh == 2_147_483_648)
        let cache = try cacheAfterStoring(["Cache-Control": "max-age=\(huge)"])
        clock.advance(86_400 * 365)
        #expect(try lookup(cache).isFresh)
        #expect(try lookup(cache, ["Cache-Control": "min-fresh=\(huge)"]).isStale)
        // A signed or fractional value is still malformed: zero.
        #expect(CacheControl(CacheFixtures.headers(["Cache-Control": "max-age=-\(huge)"])).maxAge == 0)
        #expect(CacheControl(CacheFixtures.headers(["Cache-Control": "max-age=1.5"])).maxAge == 0)
    }

    /// RFC 9111 §1.2.2: delta-seconds are digits only, and a malformed `max-age` is zero (stale).
    /// `Int("+600")` reads 600, so a `max-age=+600` kept its answer fresh for ten minutes while
    /// `max-age=-600` was stale at once.
    @Test func aDeltaSecondsValueWithAPlusSignIsMalformed() throws {
        let control = CacheControl(
            CacheFixtures.headers(["Cache-Control": "max-age=+600, max-stale=+600, min-fresh=+600"]))
        #expect(control.maxAge == 0)
        #expect(control.maxStale == 0)
        #expect(control.minFresh == 0)
        let cache = try cacheAfterStoring(["Cache-Control": "max-age=+600"])
        clock.advance(1)
        #expect(try lookup(cache).isStale)
    }

    /// RFC 9110 §5.6.4: a quoted string may hold a quoted pair (`\"`). The parser ended the
    /// string at the escaped quote, read the closing one as an opening one, and took the rest
    /// of the field for the string: a `no-store` after it was lost and the answer was stored.
    @Test func anEscapedQuoteInAQuotedArgumentDoesNotHideTheDirectivesAfterIt() throws {
        let control = CacheControl(
            CacheFixtures.headers(["Cache-Control": #"no-cache="X-A\"b", no-store, max-age=60"#]))
        #expect(control.noStore)
        #expect(control.maxAge == 60)
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(
            !cache.store(
                CacheFixtures.request(),
                CacheFixtures.response(200, ["Cache-Control": #"private="X-A\"b", no-store, max-age=60"#])))
        #expect(try lookup(cache).isMiss)
    }

    /// A quoted string that is never closed (`no-cache="Set-Cookie, no-store`) took every
    /// directive after its opening quote into it: the `no-store` was lost and the answer was
    /// stored. Such a malformed value is read with its quotes as plain characters.
    @Test func anUnterminatedQuotedArgumentDoesNotHideTheDirectivesAfterIt() throws {
        let control = CacheControl(CacheFixtures.headers(["Cache-Control": #"no-cache="Set-Cookie, no-store"#]))
        #expect(control.noStore)
        #expect(control.noCache)
        let cache = try CacheFixtures.memoryCache(clock: clock)
        #expect(
            !cache.store(
                CacheFixtures.request(),
                CacheFixtures.response(200, ["Cache-Control": #"max-age=60, private="X-A, no-store"#])))
        #expect(try lookup(cache).isMiss)
    }
}
