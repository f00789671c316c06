import CourierTesting
import Foundation
import HTTPTypes
import Logging
import Testing

@_spi(Fuzzing) @testable import Courier

/// Proxies against real ones on loopback: tinyproxy (HTTP forwarding, CONNECT, Basic
/// credentials) and dante (SOCKS5, with the username method as root).
@Suite struct ProxyTests {
    typealias Proxy = HTTPClient.Configuration.Proxy

    // MARK: - HTTP proxy (tinyproxy)

    @Test func plainHTTPGoesThroughTheProxy() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let proxy = try await offPool { try ProxyServer.tinyproxy() }
        defer { proxy.stop() }
        let client = try makeClient { $0.proxy = .url(proxy.url) }
        let response = try await client.send(HTTPRequest(.get, server.url("/echo")))
        #expect(response.status == .ok)
        // tinyproxy adds Via to what it forwards, and logs each request it serves.
        #expect(try Echo(response.body).headers["via"]?.contains("tinyproxy") == true)
        let line = "GET http://127.0.0.1:\(server.port)/echo"
        #expect(try await offPool { proxy.waitForLog(containing: line) }, "\(proxy.log)")
    }

    @Test func httpsGoesThroughAConnectTunnel() async throws {
        guard NginxServer.isInstalled else { return }
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        try Data("hello through the tunnel".utf8).write(to: root.appendingPathComponent("hello.txt"))
        let nginx = try await offPool { try NginxServer.start(tls: true, http2: true, root: root) }
        defer { nginx.stop() }
        let proxy = try await offPool { try ProxyServer.tinyproxy(username: "alice", password: "tunnel-secret") }
        defer { proxy.stop() }
        let client = try makeClient {
            $0.tls = .init(caBundlePath: nginx.caBundlePath)
            $0.proxy = .url(proxy.url, username: "alice", password: "tunnel-secret")
        }
        let response = try await client.send(HTTPRequest(.get, nginx.url("/hello.txt")))
        #expect(String(decoding: response.body, as: UTF8.self) == "hello through the tunnel")
        let line = "CONNECT 127.0.0.1:\(nginx.port)"
        #expect(try await offPool { proxy.waitForLog(containing: line) }, "\(proxy.log)")
    }

    @Test func proxyCredentialsAreSentAndNeverLogged() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let proxy = try await offPool { try ProxyServer.tinyproxy(username: "alice", password: "proxy-pass-42") }
        defer { proxy.stop() }
        let lines = Recorder<String>()
        var logger = Logger(label: "test") { _ in CapturingLogHandler(lines: lines) }
        logger.logLevel = .trace

        // Without credentials the proxy refuses.
        let anonymous = try makeClient { $0.proxy = .url(proxy.url) }
        let refused = try await anonymous.send(HTTPRequest(.get, server.url("/echo")))
        #expect(refused.status.code == 407)
        #expect(server.requestCount == 0)

        // Given apart, or in the URL: both reach the server through the proxy.
        var withUserInfo = URLComponents(url: proxy.url, resolvingAgainstBaseURL: false)!
        withUserInfo.user = "alice"
        withUserInfo.password = "proxy-pass-42"
        for setting in [Proxy.url(proxy.url, username: "alice", password: "proxy-pass-42"), .url(withUserInfo.url!)] {
            let client = try makeClient {
                $0.proxy = setting
                $0.logger = logger
            }
            let response = try await client.send(HTTPRequest(.get, server.url("/echo")))
            #expect(response.status == .ok)
            #expect(try Echo(response.body).headers["via"]?.contains("tinyproxy") == true)
            // The proxy's credentials stay with the proxy.
            #expect(try Echo(response.body).headers["proxy-authorization"] == nil)
            #expect(!setting.description.contains("proxy-pass-42"))
            #expect(setting.description.contains(Redaction.marker))
            var dumped = ""
            dump(client.configuration, to: &dumped)
            #expect(!dumped.contains("proxy-pass-42"))
        }
        #expect(server.requestCount == 2)
        let text = lines.values.joined(separator: "\n")
        #expect(text.contains("GET"))
        #expect(!text.contains("proxy-pass-42"))
    }

    @Test func aWrongProxyPasswordFailsWithoutShowingIt() async throws {
        guard NginxServer.isInstalled else { return }
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(at: root) }
        let nginx = try await offPool { try NginxServer.start(tls: true, http2: false, root: root) }
        defer { nginx.stop() }
        let proxy = try await offPool { try ProxyServer.tinyproxy(username: "alice", password: "right-pass") }
        defer { proxy.stop() }
        let client = try makeClient {
            $0.tls = .init(caBundlePath: nginx.caBundlePath)
            $0.proxy = .url(proxy.url, username: "alice", password: "wrong-pass-77")
        }
        // The CONNECT is refused with 407: no tunnel, a CourierError without the password.
        let error = await courierError { _ = try await client.send(HTTPRequest(.get, nginx.url("/"))) }
        #expect(error != nil)
        #expect(error.map { !String(describing: $0).contains("wrong-pass-77") } == true)
    }

    // MARK: - no_proxy and the environment

    @Test func bypassListGoesDirect() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let proxy = try await offPool { try ProxyServer.tinyproxy() }
        defer { proxy.stop() }
        let client = try makeClient { $0.proxy = .url(proxy.url, bypass: ["localhost"]) }
        let direct = try await client.send(HTTPRequest(.get, URL(string: "http://localhost:\(server.port)/echo")!))
        #expect(try Echo(direct.body).headers["via"] == nil)
        let proxied = try await client.send(HTTPRequest(.get, server.url("/echo")))
        #expect(try Echo(proxied.body).headers["via"]?.contains("tinyproxy") == true)
        #expect(!proxy.log.contains("GET http://localhost"))
    }

    /// An IPv6 address written as in a URL (`[::1]`) in the bypass list or `no_proxy` was
    /// handed to curl as it was, which matches only the bare form (`::1`): the request meant to
    /// go direct went through the proxy, credential and all. A `host:port` entry, which curl
    /// cannot match either, is refused rather than ignored.
    @Test func aBracketedIPv6BypassEntryGoesDirect() async throws {
        let proxy = try await offPool { try ProxyServer.tinyproxy() }
        defer { proxy.stop() }
        // Port 1 on ::1: nothing listens, so going direct fails to connect; through the proxy,
        // the proxy answers (and logs the request).
        let target = URL(string: "http://[::1]:1/echo")!
        for configured in [
            Proxy.url(proxy.url, bypass: ["[::1]"]),
            .environment(["http_proxy": proxy.url.absoluteString, "no_proxy": "example.test, [::1]"]),
        ] {
            let client = try makeClient { $0.proxy = configured }
            let error = await courierError { _ = try await client.send(HTTPRequest(.get, target)) }
            #expect(error?.code == .cannotConnect)
        }
        #expect(!proxy.log.contains("::1"))
        let error = #expect(throws: CourierError.self) {
            _ = try makeClient { $0.proxy = .url(proxy.url, bypass: ["internal.test:8080"]) }
        }
        #expect(error?.code == .configuration)
    }

    @Test func environmentProxyIsReadWhenChosen() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let proxy = try await offPool { try ProxyServer.tinyproxy() }
        defer { proxy.stop() }
        let client = try makeClient {
            $0.proxy = .environment(["http_proxy": "127.0.0.1:\(proxy.port)", "no_proxy": "localhost,example.com"])
        }
        let proxied = try await client.send(HTTPRequest(.get, server.url("/echo")))
        #expect(try Echo(proxied.body).headers["via"]?.contains("tinyproxy") == true)
        let direct = try await client.send(HTTPRequest(.get, URL(string: "http://localhost:\(server.port)/echo")!))
        #expect(try Echo(direct.body).headers["via"] == nil)
    }

    @Test func environmentRulesFollowCurl() {
        let proxy = Proxy.environment([
            "HTTP_PROXY": "http://cgi-header.invalid:1", "HTTPS_PROXY": "http://secure.test:3128",
            "ALL_PROXY": "socks5h://all.test:1080", "NO_PROXY": ".internal",
        ]).resolved()
        // HTTP_PROXY (upper case) is not read: a CGI request header `Proxy:` can set it.
        #expect(proxy.http?.url == "socks5h://all.test:1080")
        #expect(proxy.https?.url == "http://secure.test:3128")
        #expect(proxy.noProxy == ".internal")

        let lower = Proxy.environment([
            "http_proxy": "http://u:p%40ss@plain.test:8080", "https_proxy": "https.test:3128",
            "HTTPS_PROXY": "http://upper.test:1", "no_proxy": "a", "NO_PROXY": "b",
        ]).resolved()
        #expect(lower.http == ProxyRoute("http://u:p%40ss@plain.test:8080"))
        #expect(lower.http?.url == "http://plain.test:8080")
        #expect(lower.http?.username == "u")
        #expect(lower.http?.password == "p@ss")
        #expect(lower.https?.url == "http://https.test:3128")
        #expect(lower.noProxy == "a")

        #expect(Proxy.environment([:]).resolved() == ResolvedProxy())
        #expect(Proxy.none.resolved() == ResolvedProxy())
    }

    @Test(arguments: ["ftp://proxy.test:21", "http://", "http://proxy.test:1\r\nX: y"])
    func invalidProxyIsAConfigurationError(_ url: String) throws {
        let error = #expect(throws: CourierError.self) {
            _ = try makeClient {
                $0.proxy = Proxy(mode: .fixed(ProxyRoute(url), bypass: []))
            }
        }
        #expect(error?.code == .configuration)
    }

    /// A proxy URL `URLComponents` cannot read (a CR LF in it, a space in the host) kept its
    /// `user:password@` whole: the configuration error and `description` showed the password.
    @Test(arguments: ["http://alice:hunter2@proxy.test:1\r\nX: y", "http://alice:hunter2@pro xy.test:1"])
    func anUnreadableProxyURLFailsWithoutShowingItsPassword(_ url: String) {
        let fixed = Proxy(mode: .fixed(ProxyRoute(url), bypass: []))
        #expect(!fixed.description.contains("hunter2"))
        #expect(fixed.description.contains("alice:\(Redaction.marker)@"))
        for proxy in [fixed, .environment(["http_proxy": url]), .environment(["https_proxy": url])] {
            let error = #expect(throws: CourierError.self) { _ = try makeClient { $0.proxy = proxy } }
            #expect(error?.code == .configuration)
            #expect(error.map { !String(describing: $0).contains("hunter2") } == true)
        }
    }

    /// A password with a `#`, `/` or `?` not percent-encoded (as an environment variable often
    /// has it) ends the authority where `URLComponents` and the fallback read it, before the
    /// `@`: the URL was taken as having no credentials, and the configuration error and
    /// `description` showed the password.
    @Test(arguments: [
        "http://alice:hunter2#x@proxy.test:1", "http://alice:hun/ter2@proxy.test:1",
        "http://alice:hunter2?@proxy.test:1", "alice:hun#ter2@proxy.test:3128",
    ])
    func aPasswordWithAFragmentOrPathCharacterIsNeverShown(_ url: String) {
        let fixed = Proxy(mode: .fixed(ProxyRoute(url), bypass: []))
        #expect(!fixed.description.contains("ter2"))
        #expect(ProxyRoute(url).password?.contains("ter2") == true)
        for proxy in [fixed, .environment(["http_proxy": url]), .environment(["all_proxy": url])] {
            do {
                _ = try makeClient { $0.proxy = proxy }
            } catch {
                #expect(!String(describing: error).contains("ter2"))
            }
        }
    }

    @Test func invalidBypassAndEnvironmentAreConfigurationErrors() {
        for proxy in [
            Proxy.url(URL(string: "http://proxy.test:3128")!, bypass: ["a,b"]),
            .environment(["https_proxy": "gopher://proxy.test:70"]),
        ] {
            let error = #expect(throws: CourierError.self) { _ = try makeClient { $0.proxy = proxy } }
            #expect(error?.code == .configuration)
        }
    }

    // MARK: - SOCKS5 (dante)

    @Test func socks5hCarriesTheRequest() async throws {
        guard ProxyServer.hasDante else { return }
        let server = try TestServer()
        defer { server.stop() }
        let socks = try await offPool { try ProxyServer.dante(authenticated: false) }
        defer { socks.stop() }
        let client = try makeClient { $0.proxy = .url(socks.url) }
        let response = try await client.send(HTTPRequest(.get, server.url("/echo")))
        #expect(response.status == .ok)
        // dante logs each connection it passes: client → proxy → the server's port.
        #expect(try await offPool { socks.waitForLog(containing: "127.0.0.1.\(server.port)") }, "\(socks.log)")
    }

    /// dante's username method checks the system's users, so the proxy adds one: root only.
    @Test(.enabled(if: getuid() == 0, "dante's username method needs a system user, which only root can add"))
    func socks5WithUsernameAndPassword() async throws {
        guard ProxyServer.hasDante else { return }
        let server = try TestServer()
        defer { server.stop() }
        let socks = try await offPool { try ProxyServer.dante(authenticated: true) }
        defer { socks.stop() }
        let user = try #require(socks.username)
        let password = try #require(socks.password)

        let client = try makeClient { $0.proxy = .url(socks.url, username: user, password: password) }
        let response = try await client.send(HTTPRequest(.get, server.url("/echo")))
        #expect(response.status == .ok)
        #expect(try await offPool { socks.waitForLog(containing: "username%\(user)@") }, "\(socks.log)")

        let wrong = try makeClient { $0.proxy = .url(socks.url, username: user, password: "not-\(password)") }
        let error = await courierError { _ = try await wrong.send(HTTPRequest(.get, server.url("/echo"))) }
        #expect(error.map { !String(describing: $0).contains(password) } == true)
        #expect(server.requestCount == 1)
    }

    // MARK: - Pure parts

    @Test func routeTakesTheCredentialsOutOfTheURL() {
        let route = ProxyRoute("socks5h://bob:s%3Acret@127.0.0.1:1080")
        #expect(route.url == "socks5h://127.0.0.1:1080")
        #expect(route.username == "bob")
        #expect(route.password == "s:cret")
        #expect(route.description == "socks5h://bob:\(Redaction.marker)@127.0.0.1:1080")
        #expect(ProxyRoute("proxy.test:3128").url == "http://proxy.test:3128")
    }

    private static func folder() throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "courier-proxy-root-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        return root
    }
}
