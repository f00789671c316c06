import CourierTesting
import Foundation
import HTTPTypes
import Testing

@_spi(Fuzzing) @testable import Courier

/// Cookies belong to one client (or service) and one user: they never cross to another client
/// through a shared transport, go away on logout, are refused for public suffixes, and a
/// `Secure` cookie needs https both ways.
@Suite struct CookieIsolationTests {
    /// A server whose `/set` answers with `lines` as `Set-Cookie` fields.
    func server(setting lines: [String]) throws -> TestServer {
        let server = try TestServer()
        server.route("/set") { _ in
            var response = ScriptedResponse.text("set")
            for line in lines { response.headers.append(HTTPField(name: .setCookie, value: line)) }
            return response
        }
        return server
    }

    func cookieSent(by client: HTTPClient, to url: URL) async throws -> String? {
        try Echo(try await client.send(HTTPRequest(.get, url)).body).headers["cookie"]
    }

    /// libcurl's cookie engine kept cookies on the easy handles that a transport pools for
    /// every client it serves: the second client's request went out with the first one's cookie.
    @Test func clientsSharingATransportNeverSeeEachOthersCookies() async throws {
        let server = try server(setting: ["sid=alice; Path=/"])
        defer { server.stop() }
        let transport = try CurlTransport(configuration: .init(maxConnections: 1, enablesCookieEngine: true))
        var configuration = HTTPClient.Configuration(timeout: .seconds(60))
        configuration.notificationCenter = NotificationCenter()
        configuration.enablesCookieEngine = true
        let alice = try HTTPClient(configuration: configuration, transport: transport)
        let bob = try HTTPClient(configuration: configuration, transport: transport)

        _ = try await alice.send(HTTPRequest(.get, server.url("/set")))
        #expect(try await cookieSent(by: bob, to: server.url("/echo")) == nil)
        #expect(try await cookieSent(by: alice, to: server.url("/echo")) == "sid=alice")
        #expect(try await cookieSent(by: bob, to: server.url("/echo")) == nil)
    }

    @Test func logOutClearsTheClientsCookiesUnlessTheJarKeepsThem() async throws {
        let server = try server(setting: ["sid=alice"])
        defer { server.stop() }
        let client = try makeClient { $0.enablesCookieEngine = true }
        try client.logIn(credential: "alice-token")
        _ = try await client.send(HTTPRequest(.get, server.url("/set")))
        #expect(try await cookieSent(by: client, to: server.url("/echo")) == "sid=alice")
        client.logOut()
        #expect(try await cookieSent(by: client, to: server.url("/echo")) == nil)

        let keeping = try makeClient { $0.cookieJar = CookieJar(clearsOnLogout: false) }
        _ = try await keeping.send(HTTPRequest(.get, server.url("/set")))
        keeping.logOut()
        #expect(try await cookieSent(by: keeping, to: server.url("/echo")) == "sid=alice")
    }

    /// `Domain=co.uk` would reach every site under `.co.uk`; the Public Suffix List refuses it.
    @Test func cookiesForPublicSuffixesAreRefused() async throws {
        let server = try server(setting: [
            "uk=1; Domain=co.uk", "com=2; Domain=com", "site=3; Domain=example.co.uk", "io=4; Domain=.co.uk; Path=/",
        ])
        defer { server.stop() }
        let jar = CookieJar()
        let client = try makeClient {
            $0.cookieJar = jar
            $0.resolve = [.init(host: "www.example.co.uk", port: Int(server.port))]
        }
        let host = URL(string: "http://www.example.co.uk:\(server.port)")!
        _ = try await client.send(HTTPRequest(.get, host.appendingPathComponent("set")))
        #expect(jar.all.map(\.name) == ["site"])
        #expect(try await cookieSent(by: client, to: host.appendingPathComponent("echo")) == "site=3")
    }

    /// A host written with its root's dot (`evil.co.uk.`, the fully qualified form) set a cookie
    /// for `co.uk.`: libpsl does not know the dotted form of a suffix, so the jar took it and
    /// sent it to every other `.co.uk.` site (and `github.io.` the same way). The check now
    /// reads the name without its root's dot.
    @Test(arguments: ["co.uk.", ".co.uk.", "github.io.", "com."])
    func aPublicSuffixWithItsRootsDotIsRefused(_ suffix: String) async throws {
        let bare = suffix.hasPrefix(".") ? String(suffix.dropFirst()) : suffix
        let server = try server(setting: ["planted=1; Domain=\(suffix); Path=/", "own=2; Path=/"])
        defer { server.stop() }
        let jar = CookieJar()
        let evil = "evil.\(bare)"
        let victim = "victim.\(bare)"
        let client = try makeClient {
            $0.cookieJar = jar
            $0.resolve = [.init(host: evil, port: Int(server.port)), .init(host: victim, port: Int(server.port))]
        }
        _ = try await client.send(HTTPRequest(.get, URL(string: "http://\(evil):\(server.port)/set")!))
        #expect(jar.all.map(\.name) == ["own"])
        #expect(try await cookieSent(by: client, to: URL(string: "http://\(victim):\(server.port)/echo")!) == nil)
        #expect(try await cookieSent(by: client, to: URL(string: "http://\(evil):\(server.port)/echo")!) == "own=2")
    }

    /// An IPv4 address written short or in hex (`127.0.1`, `0x7f.0.1`: libcurl connects to
    /// 127.0.0.1 for both) was taken for a host name: it set a cookie for `Domain=0.1`, which
    /// went to every address ending in `.0.1` (`10.0.1` is 10.0.0.1, another machine). An IP
    /// host sets host-only cookies only (RFC 6265 §5.1.3).
    @Test func anIPv4AddressInAnotherFormSetsNoCookieForOtherAddresses() async throws {
        let server = try server(setting: ["planted=1; Domain=0.1; Path=/", "own=2; Path=/"])
        defer { server.stop() }
        let jar = CookieJar()
        let client = try makeClient { $0.cookieJar = jar }
        _ = try await client.send(HTTPRequest(.get, URL(string: "http://127.0.1:\(server.port)/set")!))
        #expect(jar.all.map(\.name) == ["own"])
        #expect(try await cookieSent(by: client, to: URL(string: "http://0x7f.0.1:\(server.port)/echo")!) == nil)
        #expect(try await cookieSent(by: client, to: URL(string: "http://127.0.1:\(server.port)/echo")!) == "own=2")
        for host in ["127.0.1", "0x7f.0.1", "2130706433", "0177.0.0.1", "127.1", "10.0.1", "127.0.0.1.", "1.2.3.4.5"] {
            #expect(CookieJar.isIPAddress(host), "\(host)")
        }
        for host in ["example.com", "0x7f.example", "123.example.123a", "example.com.", "0xg"] {
            #expect(!CookieJar.isIPAddress(host), "\(host)")
        }
    }

    /// A host of many labels sets its cookies for each of its parent domains: bounded per domain
    /// name, its one answer pushed the API's session cookie out of the jar.
    @Test func oneSiteCannotPushAnotherSitesCookiesOut() async throws {
        let labels = (1...20).map { "a\($0)." }
        let host = labels.joined() + "evil.test"
        let parents = labels.indices.map { labels[$0...].joined() + "evil.test" } + ["evil.test"]
        let server = try server(setting: ["session=alice"])
        defer { server.stop() }
        server.route("/flood") { _ in
            var response = ScriptedResponse.text("flood")
            for (index, parent) in parents.enumerated() {
                for number in 0..<10 {
                    response.headers.append(
                        HTTPField(name: .setCookie, value: "c\(index)x\(number)=1; Domain=\(parent)"))
                }
            }
            return response
        }
        let jar = CookieJar(maximumCookies: 100, maximumCookiesPerDomain: 10)
        let client = try makeClient {
            $0.cookieJar = jar
            $0.resolve = [.init(host: host, port: Int(server.port))]
        }
        _ = try await client.send(HTTPRequest(.get, server.url("/set")))
        _ = try await client.send(HTTPRequest(.get, URL(string: "http://\(host):\(server.port)/flood")!))
        #expect(try await cookieSent(by: client, to: server.url("/echo")) == "session=alice")
        #expect(jar.all.count == 11)
    }

    /// A cookie of any size was kept: a server's answers (256 KiB of head each) could fill the
    /// jar with megabytes, sent back with every request to it.
    @Test func cookiesOverFourKilobytesAreIgnored() async throws {
        let big = String(repeating: "x", count: 4_093)
        let server = try server(setting: ["big=\(big)y", "fits=\(big.dropLast(2))", "ok=1"])
        defer { server.stop() }
        let jar = CookieJar()
        let client = try makeClient { $0.cookieJar = jar }
        _ = try await client.send(HTTPRequest(.get, server.url("/set")))
        #expect(jar.all.map(\.name) == ["fits", "ok"])
        #expect(try await cookieSent(by: client, to: server.url("/echo")) == "fits=\(big.dropLast(2)); ok=1")
    }

    /// The 4,096-byte bound covered the name and value only: a `Path` (or any attribute) of
    /// 90 KiB was kept with the cookie, so fifty answers of one site held 4.5 MB in the jar and
    /// every request compared its path with them. An attribute over 1,024 bytes is ignored
    /// (RFC 6265bis §5.6), as browsers do: the cookie keeps its default path.
    @Test func anAttributeOverOneKilobyteIsIgnored() async throws {
        let long = "/" + String(repeating: "p", count: 90 << 10)
        let fits = "/" + String(repeating: "q", count: 1_023)
        let server = try server(setting: ["long=1; Path=\(long)", "fits=2; Path=\(fits)"])
        defer { server.stop() }
        let jar = CookieJar()
        let client = try makeClient { $0.cookieJar = jar }
        _ = try await client.send(HTTPRequest(.get, server.url("/set")))
        #expect(jar.all.map(\.name) == ["long", "fits"])
        #expect(jar.all.map(\.path) == ["/", fits])
        #expect(try await cookieSent(by: client, to: server.url("/echo")) == "long=1")
    }

    /// The jar's cookies went out as one `Cookie` line each (HTTPTypes keeps them as separate
    /// fields): RFC 6265 §5.4 allows one, and a server that joins repeated fields with ", "
    /// (this one, as many do) read `a` as `1, b=2`.
    @Test func cookiesGoOutInOneField() async throws {
        let server = try server(setting: ["a=1", "b=2; Path=/", "c=3"])
        defer { server.stop() }
        let client = try makeClient { $0.cookieJar = CookieJar() }
        _ = try await client.send(HTTPRequest(.get, server.url("/set")))
        #expect(try await cookieSent(by: client, to: server.url("/echo")) == "a=1; b=2; c=3")
        let lines = server.recordedRequests.last?.headerList.filter { $0.name.lowercased() == "cookie" }
        #expect(lines?.count == 1)
    }

    /// Cookies named `__Secure-…` and `__Host-…` promise they were set `Secure` over https: a
    /// plain http answer (a network attacker's) must not plant one the https site then trusts.
    @Test func anHTTPAnswerCannotPlantPrefixedCookies() async throws {
        let server = try server(setting: [
            "__Secure-sid=evil", "__Host-sid=evil; Path=/", "__host-id=evil; Path=/", "plain=1",
        ])
        defer { server.stop() }
        let jar = CookieJar()
        let client = try makeClient { $0.cookieJar = jar }
        _ = try await client.send(HTTPRequest(.get, server.url("/set")))
        #expect(jar.all.map(\.name) == ["plain"])
        #expect(try await cookieSent(by: client, to: server.url("/echo")) == "plain=1")
    }

    /// A plain http answer for the host of an https site (same host, another port here) replaced
    /// the site's `Secure` session cookie with its own, which then went out over https.
    @Test(.enabled(if: NginxServer.isInstalled, "needs nginx (scripts/bootstrap.sh installs it)"))
    func anHTTPAnswerCannotReplaceASecureCookie() async throws {
        let plain = try server(setting: ["secure=evil; Path=/"])
        defer { plain.stop() }
        try await withSecureSite { nginx in
            let client = try makeClient {
                $0.cookieJar = CookieJar()
                $0.tls = .init(caBundlePath: nginx.caBundlePath)
            }
            _ = try await client.send(HTTPRequest(.get, nginx.url("/set")))
            _ = try await client.send(HTTPRequest(.get, plain.url("/set")))
            let overHTTPS = try await client.send(HTTPRequest(.get, nginx.url("/cookie")))
            #expect(String(decoding: overHTTPS.body, as: UTF8.self) == "[secure=3]")
        }
    }

    /// Runs `body` with nginx over https on 127.0.0.1: `/set` sets the `Secure` cookie
    /// `secure=3`, `/cookie` answers the request's Cookie field as `[…]`.
    func withSecureSite(_ body: (NginxServer) async throws -> Void) async throws {
        let root = try TLSTests.makeRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let nginx = try await offPool {
            try NginxServer.start(
                tls: true, http2: true, root: root,
                extraConfig: """
                    location = /set { add_header Set-Cookie "secure=3; Secure; Path=/"; return 200 "set"; }
                    location = /cookie { return 200 "[$http_cookie]"; }
                    """)
        }
        defer { nginx.stop() }
        try await body(nginx)
    }

    /// A `Secure` cookie set over http is refused; one set over https is sent over https only.
    @Test(.enabled(if: NginxServer.isInstalled, "needs nginx (scripts/bootstrap.sh installs it)"))
    func secureCookiesNeedHTTPS() async throws {
        let plain = try server(setting: ["insecure=1; Secure", "plain=2"])
        defer { plain.stop() }
        try await withSecureSite { nginx in
            let jar = CookieJar()
            let client = try makeClient {
                $0.cookieJar = jar
                $0.tls = .init(caBundlePath: nginx.caBundlePath)
            }

            _ = try await client.send(HTTPRequest(.get, plain.url("/set")))
            #expect(jar.all.map(\.name) == ["plain"])

            _ = try await client.send(HTTPRequest(.get, nginx.url("/set")))
            #expect(Set(jar.all.map(\.name)) == ["plain", "secure"])
            let overHTTPS = try await client.send(HTTPRequest(.get, nginx.url("/cookie")))
            #expect(String(decoding: overHTTPS.body, as: UTF8.self) == "[plain=2; secure=3]")
            // Same host (127.0.0.1), plain http: the Secure cookie stays home.
            #expect(try await cookieSent(by: client, to: plain.url("/echo")) == "plain=2")
        }
    }

    /// A `Max-Age` past 64 bits is still a number of seconds (RFC 6265 §5.2.2): a server's "for
    /// ever" keeps the cookie past the session, and its huge negative one deletes it, as
    /// `Max-Age=0` does. Read as no `Max-Age` at all, the deletion replaced the user's cookie
    /// with the emptied one, sent on every later request.
    @Test func aMaxAgeBeyondSixtyFourBitsStillSetsTheExpiry() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let jar = CookieJar()
        let client = try makeClient { $0.cookieJar = jar }
        func answer(setting line: String) async throws {
            var response = ScriptedResponse.text("set")
            response.headers.append(HTTPField(name: .setCookie, value: line))
            server.enqueue(response)
            _ = try await client.send(HTTPRequest(.get, server.url("/set")))
        }
        try await answer(setting: "sid=alice; Max-Age=99999999999999999999")
        #expect(jar.all.map(\.name) == ["sid"])
        #expect(jar.all.first?.expires.map { $0 > Date().addingTimeInterval(365 * 86_400) } == true)
        #expect(try await cookieSent(by: client, to: server.url("/echo")) == "sid=alice")

        try await answer(setting: "sid=deleted; Max-Age=-99999999999999999999")
        #expect(jar.all.isEmpty)
        #expect(try await cookieSent(by: client, to: server.url("/echo")) == nil)
    }

    /// A response to a request sent before logout, arriving after it, planted the logged-out
    /// user's session cookie back into the emptied jar: the next user's requests went out with
    /// it. The jar now keeps no cookie from an answer to a request it was cleared since.
    @Test func aCookieArrivingAfterLogOutIsNotStored() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let arrived = Signal()
        let release = DispatchSemaphore(value: 0)
        server.route("/held") { _ in
            arrived.fire()
            release.wait()
            return ScriptedResponse.text("held").with(.setCookie, "sid=alice; Path=/")
        }
        let jar = CookieJar()
        let client = try makeClient { $0.cookieJar = jar }
        try client.logIn(credential: "alice-token")
        let inFlight = Task { try await client.send(HTTPRequest(.get, server.url("/held"))) }
        await arrived.wait()
        client.logOut()
        release.signal()
        _ = try await inFlight.value
        #expect(jar.all.isEmpty)
        try client.logIn(credential: "bob-token")
        #expect(try await cookieSent(by: client, to: server.url("/echo")) == nil)
        // Control: the same answer within one session is stored.
        release.signal()
        _ = try await client.send(HTTPRequest(.get, server.url("/held")))
        #expect(jar.all.map(\.name) == ["sid"])
    }

    /// A server that names its own host in `Domain` (`Domain=127.0.0.1` from 127.0.0.1,
    /// `Domain=localhost` from localhost, as frameworks do when told `domain = request.host`)
    /// sets a host-only cookie (RFC 6265 §5.3 steps 5–6; browsers keep it). The jar dropped
    /// the cookie whole: the session was never kept, every call after login was anonymous.
    /// A `Domain` naming another address or a parent of `localhost` is still refused.
    @Test(arguments: ["127.0.0.1", "localhost"])
    func aDomainNamingTheHostItselfSetsAHostOnlyCookie(_ host: String) async throws {
        let server = try server(setting: [
            "sid=own; Domain=\(host); Path=/", "other=1; Domain=127.0.0.2; Path=/", "parent=2; Domain=host; Path=/",
        ])
        defer { server.stop() }
        let jar = CookieJar()
        let client = try makeClient { $0.cookieJar = jar }
        let origin = URL(string: "http://\(host):\(server.port)")!
        _ = try await client.send(HTTPRequest(.get, origin.appendingPathComponent("set")))
        #expect(jar.all.map(\.name) == ["sid"])
        #expect(jar.all.first?.hostOnly == true)
        #expect(try await cookieSent(by: client, to: origin.appendingPathComponent("echo")) == "sid=own")
    }

    /// A stored cookie printed itself whole: `print(jar.all)`, a log line or a test failure
    /// showed the user's session token, which no description may (`Redaction`). The value is
    /// redacted in `description` and in reflection (`dump`); `value` still reads it.
    @Test func aCookiesDescriptionDoesNotShowItsValue() async throws {
        let server = try server(setting: ["sid=s3cr3t-session-token; Path=/"])
        defer { server.stop() }
        let jar = CookieJar()
        let client = try makeClient { $0.cookieJar = jar }
        _ = try await client.send(HTTPRequest(.get, server.url("/set")))
        let cookie = try #require(jar.all.first)
        #expect(cookie.value == "s3cr3t-session-token")
        var dumped = ""
        dump(jar.all, to: &dumped)
        for text in [String(describing: cookie), String(reflecting: cookie), "\(jar.all)", dumped] {
            #expect(!text.contains("s3cr3t"), "\(text)")
            #expect(text.contains("sid"))
        }
    }

    /// Two services on one client, each with a jar of its own (one user each), never send each
    /// other's cookies. One jar given to two clients is one jar, as `Configuration.cookieJar`
    /// says: each client sends the other's cookies and either's logout empties it.
    @Test func servicesJarsStayApartAndAJarGivenToTwoClientsIsShared() async throws {
        let server = try TestServer()
        defer { server.stop() }
        for user in ["alice", "bob"] {
            server.route("/login-\(user)") { _ in .json(["ok": true]).with(.setCookie, "sid=\(user); Path=/") }
        }
        struct OK: Decodable, Sendable { var ok: Bool }
        let client = try ServiceFixture.client(server)
        let alice = ServiceCore(client: client, configuration: ServiceConfiguration(cookieJar: CookieJar()))
        let bob = ServiceCore(client: client, configuration: ServiceConfiguration(cookieJar: CookieJar()))
        let _: OK = try await alice.get("login-alice")
        #expect(try await (bob.get("echo") as Echo).headers["cookie"] == nil)
        let _: OK = try await bob.get("login-bob")
        #expect(try await (alice.get("echo") as Echo).headers["cookie"] == "sid=alice")
        #expect(try await (bob.get("echo") as Echo).headers["cookie"] == "sid=bob")

        let shared = CookieJar()
        let one = try makeClient { $0.cookieJar = shared }
        let two = try makeClient { $0.cookieJar = shared }
        _ = try await one.send(HTTPRequest(.get, server.url("/login-alice")))
        #expect(try await cookieSent(by: two, to: server.url("/echo")) == "sid=alice")
        two.logOut()
        #expect(try await cookieSent(by: one, to: server.url("/echo")) == nil)
    }
}
