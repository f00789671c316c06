import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

@Suite struct CookieJarTests {
    func request(_ url: String) -> HTTPRequest {
        let parts = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        let scheme = String(parts[0].dropLast())
        let path = parts.count > 3 ? "/" + parts[3] : "/"
        return HTTPRequest(method: .get, scheme: scheme, authority: String(parts[2]), path: path)
    }

    func setting(_ lines: String...) -> HTTPResponse {
        var fields = HTTPFields()
        for line in lines { fields.append(HTTPField(name: .setCookie, value: line)) }
        return HTTPResponse(status: .ok, headerFields: fields)
    }

    @Test func storesAndSendsHostOnlyCookies() {
        let jar = CookieJar(clock: ManualServiceClock())
        jar.store(
            from: setting("sid=abc; Path=/; HttpOnly", "theme=dark"), for: request("https://api.example.com/login"))
        #expect(jar.cookieHeader(for: request("https://api.example.com/users")) == "sid=abc; theme=dark")
        #expect(jar.cookieHeader(for: request("https://sub.api.example.com/users")) == nil)
        #expect(jar.cookieHeader(for: request("https://other.example/")) == nil)
        var head = request("https://api.example.com:8443/x")
        jar.apply(to: &head)
        #expect(head.headerFields[.cookie] == "sid=abc; theme=dark")
    }

    @Test func domainAttributeCoversSubdomainsButNotOtherSites() {
        let jar = CookieJar(clock: ManualServiceClock())
        let origin = request("https://www.example.com/")
        jar.store(from: setting("a=1; Domain=.example.com", "b=2; Domain=evil.com", "c=3; Domain=com"), for: origin)
        #expect(jar.cookieHeader(for: request("https://api.example.com/")) == "a=1")
        #expect(jar.cookieHeader(for: request("https://evil.com/")) == nil)
        #expect(jar.all.count == 1)
    }

    /// RFC 6265 §5.3 step 5 with the Public Suffix List (libpsl's built-in copy).
    @Test func publicSuffixDomainsAreRefusedUnlessTheyAreTheHost() {
        let now = Date()
        for domain in ["co.uk", ".co.uk", "com", "github.io", "CO.UK"] {
            #expect(
                CookieJar.parse("a=1; Domain=\(domain)", host: "www.example.co.uk", requestPath: "/", now: now) == nil)
        }
        #expect(CookieJar.parse("a=1; Domain=github.io", host: "user.github.io", requestPath: "/", now: now) == nil)
        #expect(
            CookieJar.parse("a=1; Domain=user.github.io", host: "www.user.github.io", requestPath: "/", now: now)?
                .domain == "user.github.io")
        let site = CookieJar.parse("a=1; Domain=example.co.uk", host: "www.example.co.uk", requestPath: "/", now: now)
        #expect(site?.domain == "example.co.uk" && site?.hostOnly == false)
        // A public suffix that is the host itself: a host-only cookie.
        let own = CookieJar.parse("a=1; Domain=github.io", host: "github.io", requestPath: "/", now: now)
        #expect(own?.domain == "github.io" && own?.hostOnly == true)
        #expect(CookieJar.isPublicSuffix("co.uk") && !CookieJar.isPublicSuffix("example.co.uk"))
    }

    @Test func secureCookiesAreTakenOnlyFromHTTPS() {
        let jar = CookieJar(clock: ManualServiceClock())
        jar.store(from: setting("s=1; Secure", "p=2"), for: request("http://h.example/"))
        #expect(jar.all.map(\.name) == ["p"])
        jar.store(from: setting("s=1; Secure"), for: request("https://h.example/"))
        #expect(jar.cookieHeader(for: request("https://h.example/")) == "p=2; s=1")
        #expect(jar.cookieHeader(for: request("http://h.example/")) == "p=2")
    }

    /// RFC 6265bis §4.1.3: `__Secure-` needs `Secure`; `__Host-` needs `Secure`, no `Domain`
    /// and `Path=/`; the prefixes match in any case.
    @Test func namePrefixesNeedWhatTheyPromise() {
        let jar = CookieJar(clock: ManualServiceClock())
        jar.store(
            from: setting(
                "__Secure-a=1", "__Secure-b=2; Secure", "__secure-c=3", "__Host-d=4; Secure",
                "__Host-e=5; Secure; Path=/; Domain=example.com", "__HOST-f=6; Path=/", "__Host-g=7; Secure; Path=/",
                "__Host-h=8; Secure; Path=/login"),
            for: request("https://www.example.com/login"))
        #expect(jar.all.map(\.name) == ["__Secure-b", "__Host-g"])
    }

    /// RFC 6265bis §5.7 step 16: an http answer for the same host cannot replace, shadow or
    /// delete a `Secure` cookie; an https answer can.
    @Test func plainHTTPLeavesSecureCookiesAlone() {
        let jar = CookieJar(clock: ManualServiceClock())
        jar.store(from: setting("sid=good; Secure; Path=/"), for: request("https://example.com/"))
        jar.store(
            from: setting("sid=evil; Path=/", "sid=evil; Path=/admin", "sid=x; Max-Age=0", "other=1"),
            for: request("http://example.com/"))
        #expect(jar.cookieHeader(for: request("https://example.com/admin")) == "sid=good; other=1")
        jar.store(from: setting("sid=new; Secure; Path=/"), for: request("https://example.com/"))
        // The new `sid` keeps the replaced one's creation-time, so its place (RFC 6265 §5.3 step 11.3).
        #expect(jar.cookieHeader(for: request("https://example.com/")) == "sid=new; other=1")
    }

    /// RFC 6265 §5.3 step 11.3 (6265bis §5.7 step 22.3): a replacement keeps the old cookie's
    /// creation-time, which orders cookies of one path length in the `Cookie` line, as browsers
    /// and curl do; a deleted and set again cookie is a new one.
    @Test func aReplacedCookieKeepsItsPlaceInTheLine() {
        let jar = CookieJar(clock: ManualServiceClock())
        let home = request("https://example.com/")
        jar.store(from: setting("a=1", "b=1", "c=1"), for: home)
        jar.store(from: setting("a=2"), for: home)
        jar.store(from: setting("b=2; Max-Age=0"), for: home)
        jar.store(from: setting("b=3"), for: home)
        #expect(jar.cookieHeader(for: home) == "a=2; c=1; b=3")
        jar.store(from: setting("c=2; Path=/x"), for: home)
        #expect(jar.cookieHeader(for: request("https://example.com/x/y")) == "c=2; a=2; c=1; b=3")
    }

    @Test func logOutClearsUnlessTheJarKeepsItsCookies() {
        let clearing = CookieJar(clock: ManualServiceClock())
        let keeping = CookieJar(clock: ManualServiceClock(), clearsOnLogout: false)
        for jar in [clearing, keeping] {
            jar.store(from: setting("a=1"), for: request("https://h.example/"))
            jar.logOut()
        }
        #expect(clearing.all.isEmpty)
        #expect(keeping.all.map(\.name) == ["a"])
    }

    @Test func pathAndSecureRules() {
        let jar = CookieJar(clock: ManualServiceClock())
        jar.store(
            from: setting("root=1; Path=/", "deep=2; Path=/api/v1", "sec=3; Secure"),
            for: request("https://h.example/api/v1/login"))
        #expect(jar.cookieHeader(for: request("https://h.example/api/v1/users")) == "deep=2; sec=3; root=1")
        #expect(jar.cookieHeader(for: request("https://h.example/api/v10")) == "root=1")
        #expect(jar.cookieHeader(for: request("http://h.example/api/v1/users")) == "deep=2; root=1")
    }

    @Test func expiryMaxAgeAndDeletion() {
        let clock = ManualServiceClock()
        let jar = CookieJar(clock: clock)
        let origin = request("https://h.example/")
        let expires = HTTPDateFormat.format(clock.wallTime.addingTimeInterval(100))
        jar.store(from: setting("short=1; Max-Age=10", "dated=2; Expires=\(expires)", "session=3"), for: origin)
        #expect(jar.all.count == 3)
        clock.advance(by: .seconds(11))
        #expect(jar.cookieHeader(for: origin) == "dated=2; session=3")
        clock.advance(by: .seconds(100))
        #expect(jar.cookieHeader(for: origin) == "session=3")
        jar.store(from: setting("session=x; Max-Age=0"), for: origin)
        #expect(jar.cookieHeader(for: origin) == nil)
    }

    @Test func replacesByNameDomainPathAndIsBounded() {
        let jar = CookieJar(clock: ManualServiceClock(), maximumCookies: 10, maximumCookiesPerDomain: 5)
        let origin = request("https://h.example/")
        jar.store(from: setting("a=1"), for: origin)
        jar.store(from: setting("a=2"), for: origin)
        #expect(jar.cookieHeader(for: origin) == "a=2")
        for index in 0..<20 { jar.store(from: setting("n\(index)=v"), for: origin) }
        #expect(jar.all.count == 5)
        #expect(jar.cookieHeader(for: origin)?.contains("n19=v") == true)
        jar.removeAll()
        #expect(jar.all.isEmpty)
    }

    @Test func rejectsMalformedAndInjectedValues() {
        let jar = CookieJar(clock: ManualServiceClock())
        let origin = request("https://h.example/")
        jar.store(from: setting("novalue", "=x", "ok=1"), for: origin)
        #expect(jar.cookieHeader(for: origin) == "ok=1")
        #expect(CookieJar.parse("a=b\u{1}c", host: "h.example", requestPath: "/", now: Date()) == nil)
        let ip = request("http://127.0.0.1:8080/")
        jar.store(from: setting("x=1; Domain=0.0.1"), for: ip)
        jar.store(from: setting("y=2"), for: ip)
        #expect(jar.cookieHeader(for: ip) == "y=2")
    }

    /// RFC 6265 §5.1.1 reads `Expires` by its tokens, in any order: the weekday is optional,
    /// a two-digit year is 19xx or 20xx in every form, the zone is ignored. The jar read it with
    /// the HTTP date parser, which knows three fixed layouts: a deletion written without the
    /// weekday or as JavaScript writes dates was not one (the emptied cookie stayed and was
    /// sent), and an asctime date with a two-digit year was year 38 (the cookie never stored).
    @Test(arguments: [
        ("Wed, 09 Jun 2038 10:18:14 GMT", "Wed, 09 Jun 2038 10:18:14 GMT"),
        ("Wednesday, 09-Jun-38 10:18:14 GMT", "Wed, 09 Jun 2038 10:18:14 GMT"),
        ("Wed Jun  9 10:18:14 2038", "Wed, 09 Jun 2038 10:18:14 GMT"),
        ("Wed Jun  9 10:18:14 38", "Wed, 09 Jun 2038 10:18:14 GMT"),
        ("Wed, 09-Jun-2038 10:18:14 GMT", "Wed, 09 Jun 2038 10:18:14 GMT"),
        ("09 Jun 2038 10:18:14 GMT", "Wed, 09 Jun 2038 10:18:14 GMT"),
        ("Jun 9 10:18:14 2038", "Wed, 09 Jun 2038 10:18:14 GMT"),
        ("wed, 09 JUNE 2038 10:18:14 gmt", "Wed, 09 Jun 2038 10:18:14 GMT"),
        ("Thu Jan 01 1970 00:00:00 GMT+0000 (Coordinated Universal Time)", "Thu, 01 Jan 1970 00:00:00 GMT"),
        ("Thu, 01-Jan-70 00:00:01 GMT", "Thu, 01 Jan 1970 00:00:01 GMT"),
        ("Sat, 29 Feb 2020 1:2:3 GMT", "Sat, 29 Feb 2020 01:02:03 GMT"),
        ("Mon, 01 Jan 1601 00:00:00 GMT", "Mon, 01 Jan 1601 00:00:00 GMT"),
    ])
    func expiresIsReadAsACookieDate(_ written: String, _ meant: String) throws {
        let cookie = CookieJar.parse("a=1; Expires=\(written)", host: "h.example", requestPath: "/", now: Date())
        let expected = try #require(HTTPDateFormat.parse(meant))
        #expect(cookie?.expires == expected)
    }

    /// What RFC 6265 §5.1.1 refuses leaves the cookie a session cookie: no day 32 or hour 24,
    /// no 31 February or 29 February 2001 (it was read as a day of March), no second 60, no
    /// year before 1601 (it was a deletion), no five-digit year, no missing part.
    @Test(arguments: [
        "garbage", "", "Wed, 32 Jun 2038 10:18:14 GMT", "Wed, 09 Jun 2038 24:00:00 GMT",
        "Fri, 31 Feb 2038 10:18:14 GMT",
        "Thu, 29 Feb 2001 00:00:00 GMT", "Wed, 09 Jun 2038 10:18:60 GMT", "Wed, 09 Jun 1600 10:18:14 GMT",
        "Wed, 09 Jun 20381 10:18:14 GMT", "Wed, 09 Jun 2038", "Wed, 09 2038 10:18:14 GMT", "Jun 2038 10:18:14",
        "Wed, 009 Jun 2038 10:18:14 GMT", "Wed, 09 Jun 2038 10:018:14 GMT",
    ])
    func anExpiresThatIsNoCookieDateIsIgnored(_ written: String) {
        let cookie = CookieJar.parse("a=1; Expires=\(written)", host: "h.example", requestPath: "/", now: Date())
        #expect(cookie != nil)
        #expect(cookie?.expires == nil)
    }

    /// RFC 6265 §5.3 steps 4 and 7: the last `Domain` and the last `Path` count; a `Path` that
    /// does not start with `/` is the default path (6265bis §5.6.4), not a reason to keep an
    /// earlier one. The jar kept the first valid `Path` and refused a cookie whose first
    /// `Domain` was another site's.
    @Test func theLastDomainAndPathCount() {
        let now = Date()
        func parse(_ line: String, path: String = "/p/q") -> Cookie? {
            CookieJar.parse(line, host: "www.example.com", requestPath: path, now: now)
        }
        #expect(parse("a=1; Path=/a; Path=x")?.path == "/p")
        #expect(parse("a=1; Path=/a; Path=")?.path == "/p")
        #expect(parse("a=1; Path=x; Path=/a")?.path == "/a")
        let domain = parse("a=1; Domain=other.com; Domain=example.com")
        #expect(domain?.domain == "example.com" && domain?.hostOnly == false)
        #expect(parse("a=1; Domain=example.com; Domain=other.com") == nil)
        #expect(parse("a=1; Domain=example.com; Domain=")?.domain == "example.com")
        #expect(parse("a=1; Domain=example.com; Domain=www.example.com")?.domain == "www.example.com")
        // `__Host-` needs the last `Path` to be `/` itself (as browsers read it).
        #expect(parse("__Host-a=1; Secure; Path=/; Path=x", path: "/") == nil)
        #expect(parse("__Host-a=1; Secure; Path=x; Path=/", path: "/")?.path == "/")
        #expect(parse("__Host-a=1; Secure; Domain=www.example.com; Domain=", path: "/") == nil)
    }

    /// RFC 6265bis §5.7 step 22: a cookie replaces the one of the same name, domain, path and
    /// host-only flag. A host-only `a` and `a; Domain=` the same host are two cookies (browsers
    /// and curl keep both); the jar replaced one with the other, and a deletion of the host-only
    /// one deleted the Domain cookie too.
    @Test func aHostOnlyCookieAndADomainCookieOfOneNameAreTwo() {
        let jar = CookieJar(clock: ManualServiceClock())
        let origin = request("https://www.example.com/")
        jar.store(from: setting("a=1"), for: origin)
        jar.store(from: setting("a=2; Domain=www.example.com"), for: origin)
        #expect(jar.cookieHeader(for: origin) == "a=1; a=2")
        #expect(jar.cookieHeader(for: request("https://sub.www.example.com/")) == "a=2")
        jar.store(from: setting("a=; Max-Age=0"), for: origin)
        #expect(jar.cookieHeader(for: origin) == "a=2")
        jar.store(from: setting("a=3; Domain=www.example.com"), for: origin)
        #expect(jar.cookieHeader(for: origin) == "a=3")
    }

    /// A cookie goes out until its expiry and not at it (Chrome's reading; curl still sends it
    /// during that second): `Max-Age=10` is sent 9.999 s later, not 10 s later.
    @Test func aCookieStopsAtItsExpiry() {
        let clock = ManualServiceClock()
        let jar = CookieJar(clock: clock)
        let origin = request("https://h.example/")
        jar.store(from: setting("a=1; Max-Age=10"), for: origin)
        clock.advance(by: .milliseconds(9_999))
        #expect(jar.cookieHeader(for: origin) == "a=1")
        clock.advance(by: .milliseconds(1))
        #expect(jar.cookieHeader(for: origin) == nil)
    }
}
